// The phase change, one definition (cs::phase_change): hand-built records, and the shipped
// metrics files give what the report's own reading of them gives (the report's numbers stand).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "analysis/training_metrics.h"

namespace cs {
namespace {

using Steps = std::vector<std::int64_t>;
using Scores = std::vector<std::vector<double>>;

TEST(PhaseChange, FirstRecordWhoseBestHeadPassesHalfTheFinalBest) {
  // Two layers of two heads. The final best is 0.8 (head 3 = L1H1); half is 0.4. At step 200 the
  // best head is L0H1 with 0.45: the phase change is there, named by the head that crossed.
  const Steps steps{0, 100, 200, 300};
  const Scores pm{
      {0.01, 0.02, 0.0, 0.03}, {0.1, 0.3, 0.2, 0.39}, {0.1, 0.45, 0.2, 0.3}, {0.1, 0.5, 0.2, 0.8}};
  auto pc = phase_change(steps, pm, 2);
  ASSERT_TRUE(pc.has_value());
  EXPECT_EQ(pc->step, 200);
  EXPECT_EQ(pc->record, 2);
  EXPECT_EQ(pc->layer, 0);
  EXPECT_EQ(pc->head, 1);
  EXPECT_DOUBLE_EQ(pc->final_score, 0.8);
  EXPECT_DOUBLE_EQ(pc->threshold, 0.4);
  // "Before" it is two records earlier: step 100's best (0.39) is under half but already rising.
  EXPECT_EQ(pc->before_step, 0);
  // Without n_heads every score is a head of layer 0.
  EXPECT_EQ(phase_change(steps, pm)->head, 1);
}

TEST(PhaseChange, NoneBelowTheMinimumScoreOrWithoutRecords) {
  EXPECT_FALSE(phase_change(Steps{0, 10}, Scores{{0.02, 0.05}, {0.04, 0.099}}).has_value());
  EXPECT_FALSE(phase_change(Steps{}, Scores{}).has_value());
  EXPECT_FALSE(phase_change(Steps{0}, Scores{{}}).has_value());
  // Exactly the minimum counts; negative scores count as 0.
  auto pc = phase_change(Steps{0, 5}, Scores{{-0.3}, {0.1}});
  ASSERT_TRUE(pc.has_value());
  EXPECT_EQ(pc->step, 5);
  EXPECT_EQ(pc->before_step, -1);  // no record two before it
  EXPECT_THROW(phase_change(Steps{0}, Scores{}), std::invalid_argument);
}

TEST(PhaseChange, JsonRecordsAndMissingScores) {
  nlohmann::json recs = nlohmann::json::array();
  recs.push_back({{"step", 0}});
  recs.push_back({{"step", 50}, {"prefix_matching", {0.2, 0.6}}});
  recs.push_back({{"step", 100}, {"prefix_matching", {0.3, 0.9}}});
  auto pc = phase_change(recs, 2);
  ASSERT_TRUE(pc.has_value());
  EXPECT_EQ(pc->step, 50);
  EXPECT_EQ(pc->head, 1);
  EXPECT_THROW(phase_change(nlohmann::json::object()), std::invalid_argument);
}

// The report's reading (src/report.cpp, phase_change_step) written out again: the shipped metrics
// files must give the same step through cs::phase_change.
int report_phase_change_step(const nlohmann::json& metrics) {
  const auto& recs = metrics["records"];
  auto best = [](const nlohmann::json& r) {
    double b = 0;
    for (const auto& x : r["prefix_matching"]) b = std::max(b, x.get<double>());
    return b;
  };
  if (recs.empty()) return -1;
  const double final_best = best(recs.back());
  if (final_best < 0.1) return -1;
  for (const auto& r : recs)
    if (best(r) >= 0.5 * final_best) return r["step"].get<int>();
  return -1;
}

TEST(PhaseChange, ShippedMetricsGiveTheReportsSteps) {
  int files = 0, with_phase_change = 0;
  for (const auto& e : std::filesystem::directory_iterator("models")) {
    const std::string name = e.path().filename().string();
    if (name.size() < 13 || name.substr(name.size() - 13) != ".metrics.json") continue;
    std::ifstream f(e.path());
    const nlohmann::json m = nlohmann::json::parse(f);
    auto pc = phase_change(m["records"]);
    EXPECT_EQ(pc ? pc->step : -1, report_phase_change_step(m)) << name;
    ++files;
    with_phase_change += pc.has_value();
  }
  EXPECT_GE(files, 3);
  EXPECT_GE(with_phase_change, 1);
}

}  // namespace
}  // namespace cs
