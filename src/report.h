// Report: recomputes, from the shipped models alone, every claim of the seeds that these models
// can test, with the seed's figure, the measured figure and a one-line verdict.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace cs {

// Reads models_dir (the shipped *.safetensors, *.metrics.json, *.seeds.json and corpus/valid.txt)
// and returns {"claims": [{id, seed, claim, seed_figure, measured, verdict, view}], ...}.
// Throws std::runtime_error naming a missing file.
nlohmann::json build_report(const std::string& models_dir);
// The same as Markdown (REPORT.md).
std::string report_markdown(const nlohmann::json& report);

}  // namespace cs
