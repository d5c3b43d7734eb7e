// The shipped model zoo: the files in models/ load and match their recipes, and the fast IOI
// claims reproduce from the committed recipes (the IOI seed, 001_...).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/ioi.h"
#include "io.h"
#include "train.h"

namespace cs {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

IoiEvaluation train_recipe(const std::string& name) {
  Recipe r = recipe_from_json(read_json("models/recipes/" + name + ".json"), "models/recipes");
  Trainer tr(r);
  for (int s = 0; s < r.steps; ++s) tr.step();
  IoiEvaluation ev = ioi_evaluate(tr.params());
  std::printf("[ models ] %s from its recipe (seed %d): %d/%d correct, p(IO) %.3f, p(S) %.3f\n", name.c_str(),
              static_cast<int>(r.seed), ev.correct, ev.n, ev.mean_prob_io, ev.mean_prob_s);
  return ev;
}

// Seed: one layer with two heads reaches 100%.
TEST(Models, Ioi1L2HRecipeSolvesTheTask) {
  IoiEvaluation ev = train_recipe("ioi-1l2h");
  EXPECT_EQ(ev.correct, 60);
}

// Seed: one head fails, putting near-equal probability on the two names.
TEST(Models, Ioi1L1HRecipeFailsWithEqualProbabilities) {
  IoiEvaluation ev = train_recipe("ioi-1l1h");
  EXPECT_LT(ev.accuracy, 0.6);
  EXPECT_NEAR(ev.mean_prob_io, ev.mean_prob_s, 0.1);
  EXPECT_GT(ev.mean_prob_io + ev.mean_prob_s, 0.9);
}

// Every shipped model loads, matches the config its recipe asks for, and records that recipe.
TEST(Models, ShippedFilesLoadAndMatchTheirRecipes) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator("models")) {
    if (entry.path().extension() != ".safetensors") continue;
    const std::string name = entry.path().stem().string();
    SCOPED_TRACE(name);
    ModelFile m = load_model_file(entry.path().string());
    const fs::path recipe_path = fs::path("models/recipes") / (name + ".json");
    ASSERT_TRUE(fs::exists(recipe_path)) << "no recipe for the shipped model " << name;
    Recipe r = recipe_from_json(read_json(recipe_path), "models/recipes");
    Config want = r.model;
    want.d_vocab = m.tokenizer.size();
    EXPECT_EQ(m.cfg, want);
    ASSERT_TRUE(m.info.contains("recipe"));
    EXPECT_EQ(m.info["recipe"]["name"], r.name);
    EXPECT_EQ(m.info["step"], r.steps);
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

}  // namespace
}  // namespace cs
