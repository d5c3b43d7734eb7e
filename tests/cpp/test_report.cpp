// The reproduction report's outcome of a verdict (claim_outcome): what the Reproduction view's
// headline counts and its marks show.
#include <gtest/gtest.h>

#include <stdexcept>

#include "report.h"

using cs::claim_outcome;

TEST(ClaimOutcome, EachVerdictFormTheReportWrites) {
  EXPECT_EQ(claim_outcome("reproduced"), "reproduced");
  EXPECT_EQ(claim_outcome("reproduced on 3 of 3 seeds"), "reproduced");
  EXPECT_EQ(claim_outcome("reproduced; Q-composition is needed as well (its cut adds 3.26 nats, K's 3.07)"), "reproduced");
  EXPECT_EQ(claim_outcome("appears"), "reproduced");
  EXPECT_EQ(claim_outcome("bpe-2l: reproduced on 3 of 3 seeds; bpe-1l-smeared: reproduced on 3 of 3 seeds"), "reproduced");
  EXPECT_EQ(claim_outcome("not reproduced (0 of 3 seeds)"), "not reproduced");
  EXPECT_EQ(claim_outcome("not solved: near-equal probability on IO and S"), "not reproduced");
  EXPECT_EQ(claim_outcome("does not appear"), "not reproduced");
  EXPECT_EQ(claim_outcome("partly: reproduced on 1 of 3 seeds (not on the shipped seed)"), "partly");
  EXPECT_EQ(claim_outcome("bump (a rise over 0.005 nats): reproduced on 3 of 3 seeds; turn (within 500 steps): not reproduced (0 of 3 seeds)"),
            "partly");
  EXPECT_EQ(claim_outcome("2-layer jump: not reproduced (0 of 3 seeds); 1-layer no rise: reproduced on 3 of 3 seeds."), "partly");
  EXPECT_EQ(claim_outcome("solved on held-out templates; held-out name pairs only partly"), "partly");
  EXPECT_EQ(claim_outcome("measured only"), "measured");
  EXPECT_EQ(claim_outcome("shown"), "measured");
  EXPECT_THROW(claim_outcome("looks fine"), std::logic_error);
}
