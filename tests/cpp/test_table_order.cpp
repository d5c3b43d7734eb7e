// The display order of a circuit table (table_order): the top-N rows and columns by variance,
// then rows / columns by decreasing mean, ties in index order, as the page's heatmaps show them;
// computed from the factors (table_stats), and equal to the definition on the explicit table.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "analysis/circuits.h"
#include "rng.h"

namespace cs {
namespace {

MatRM<float> table(int R, int C, std::initializer_list<float> v) {
  MatRM<float> t(R, C);
  auto it = v.begin();
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) t(i, j) = *it++;
  return t;
}

// An explicit table as a factored one: t I.
Factored factored(const MatRM<float>& t) {
  return Factored{t.cast<double>(), MatRM<double>::Identity(t.cols(), t.cols())};
}
TableOrder table_order(const MatRM<float>& t, TableSort sort, int top) { return cs::table_order(factored(t), sort, top); }

// Row i's mean and sum of squared deviations, straight from the definition.
double row_mean(const MatRM<float>& t, int i) { return t.row(i).cast<double>().mean(); }
double row_spread(const MatRM<float>& t, int i) {
  const double m = row_mean(t, i);
  return (t.row(i).cast<double>().array() - m).square().sum();
}

TEST(TableOrder, NoneAndNoTopIsIndexOrder) {
  const MatRM<float> t = table(2, 3, {3, 1, 2, 9, 8, 7});
  const TableOrder o = table_order(t, TableSort::None, 0);
  EXPECT_EQ(o.rows, (std::vector<int>{0, 1}));
  EXPECT_EQ(o.cols, (std::vector<int>{0, 1, 2}));
  // top at or past the size keeps everything.
  EXPECT_EQ(table_order(t, TableSort::None, 3).cols, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(table_order(t, TableSort::None, 2).rows, (std::vector<int>{0, 1}));
}

TEST(TableOrder, SortsByDecreasingMeanWithTiesInIndexOrder) {
  // Row means 2, 8, 2, 4; column means 3, 4.5, 4.5 (columns 1 and 2 tie).
  const MatRM<float> t = table(4, 3, {1, 2, 3, 8, 7, 9, 3, 2, 1, 0, 7, 5});
  EXPECT_EQ(table_order(t, TableSort::Rows, 0).rows, (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(table_order(t, TableSort::Rows, 0).cols, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(table_order(t, TableSort::Cols, 0).rows, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(table_order(t, TableSort::Cols, 0).cols, (std::vector<int>{1, 2, 0}));
  const TableOrder both = table_order(t, TableSort::Both, 0);
  EXPECT_EQ(both.rows, (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(both.cols, (std::vector<int>{1, 2, 0}));
}

TEST(TableOrder, TopKeepsTheMostVariedInIndexOrderThenSorts) {
  // Row spreads: row 0 = 0, row 1 = 2 (1, 3 around 2), row 2 = 50 (0, 10), row 3 = 2 (ties row 1).
  const MatRM<float> t = table(4, 2, {4, 4, 1, 3, 0, 10, 6, 8});
  // top 2 rows: row 2, then row 1 (ties with row 3: the lower index wins), shown in index order.
  EXPECT_EQ(table_order(t, TableSort::None, 2).rows, (std::vector<int>{1, 2}));
  // sorted by mean: row 2 (5) before row 1 (2).
  EXPECT_EQ(table_order(t, TableSort::Rows, 2).rows, (std::vector<int>{2, 1}));
  EXPECT_EQ(table_order(t, TableSort::Rows, 3).rows, (std::vector<int>{3, 2, 1}));
  // top 1 column of 2: column 1 (values 4, 3, 10, 8) varies more than column 0 (4, 1, 0, 6).
  EXPECT_EQ(table_order(t, TableSort::None, 1).cols, (std::vector<int>{1}));
}

TEST(TableOrder, RandomTablesKeepTheMostVariedRowsSortedByMean) {
  Rng rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int R = 5 + trial, C = 3 + (trial * 7) % 11, top = 1 + trial % 6;
    MatRM<float> t(R, C);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) t(i, j) = static_cast<float>(rng.uniform() * 4 - 2);
    const TableOrder o = table_order(t, TableSort::Both, top);
    ASSERT_EQ(static_cast<int>(o.rows.size()), std::min(top, R));
    ASSERT_EQ(static_cast<int>(o.cols.size()), std::min(top, C));
    for (std::size_t a = 1; a < o.rows.size(); ++a) EXPECT_GE(row_mean(t, o.rows[a - 1]), row_mean(t, o.rows[a]));
    double least_kept = 1e300;
    for (int i : o.rows) least_kept = std::min(least_kept, row_spread(t, i));
    for (int i = 0; i < R; ++i)
      if (std::find(o.rows.begin(), o.rows.end(), i) == o.rows.end()) EXPECT_LE(row_spread(t, i), least_kept + 1e-9);
    // The transpose's rows are this table's columns.
    const MatRM<float> tt = t.transpose();
    EXPECT_EQ(table_order(tt, TableSort::Both, top).rows, o.cols);
  }
}

// The statistics from the factors equal the definition on the materialized product, and the shown
// entries are the product's (a low-rank table, as the circuits are).
TEST(TableOrder, StatisticsFromTheFactorsEqualTheExplicitTable) {
  Rng rng(11);
  for (int trial = 0; trial < 10; ++trial) {
    const int R = 7 + 3 * trial, C = 5 + 4 * trial, K = 1 + trial % 5;
    Factored f{MatRM<double>(R, K), MatRM<double>(K, C)};
    for (int i = 0; i < R * K; ++i) f.A.data()[i] = rng.uniform() * 2 - 1 + (i % 3 == 0 ? 3 : 0);
    for (int i = 0; i < K * C; ++i) f.B.data()[i] = rng.uniform() * 2 - 1;
    const MatRM<double> m = f.A * f.B;
    const TableStats s = table_stats(f);
    for (int i = 0; i < R; ++i) {
      const double mean = m.row(i).mean();
      EXPECT_NEAR(s.row_mean[i], mean, 1e-12);
      EXPECT_NEAR(s.row_spread[i], (m.row(i).array() - mean).square().sum(), 1e-10);
    }
    for (int j = 0; j < C; ++j) {
      const double mean = m.col(j).mean();
      EXPECT_NEAR(s.col_mean[j], mean, 1e-12);
      EXPECT_NEAR(s.col_spread[j], (m.col(j).array() - mean).square().sum(), 1e-10);
    }
    const TableOrder o = cs::table_order(f, TableSort::Both, 4);
    const MatRM<double> shown = gather(f, o.rows, o.cols);
    ASSERT_EQ(shown.rows(), static_cast<Eigen::Index>(o.rows.size()));
    for (std::size_t i = 0; i < o.rows.size(); ++i)
      for (std::size_t j = 0; j < o.cols.size(); ++j) EXPECT_NEAR(shown(i, j), m(o.rows[i], o.cols[j]), 1e-12);
  }
  const Factored f{MatRM<double>::Ones(3, 2), MatRM<double>::Ones(2, 4)};
  EXPECT_THROW(gather(f, {3}, {0}), std::invalid_argument);
  EXPECT_THROW(gather(f, {0}, {-1}), std::invalid_argument);
}

TEST(TableOrder, SortNames) {
  EXPECT_EQ(table_sort_from_name("none"), TableSort::None);
  EXPECT_EQ(table_sort_from_name("row"), TableSort::Rows);
  EXPECT_EQ(table_sort_from_name("col"), TableSort::Cols);
  EXPECT_EQ(table_sort_from_name("both"), TableSort::Both);
  EXPECT_THROW(table_sort_from_name("token"), std::invalid_argument);
}

}  // namespace
}  // namespace cs
