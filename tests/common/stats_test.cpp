#include <gtest/gtest.h>

#include <stdexcept>

#include "course/stats.h"

TEST(Stats, MedianOfOddCountIsTheMiddleValue) {
  EXPECT_DOUBLE_EQ(course::median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_DOUBLE_EQ(course::median({2.5}), 2.5);
}

TEST(Stats, MedianOfEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(course::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(course::median({1.0, 1.0}), 1.0);
}

TEST(Stats, MedianIgnoresOneOutlier) {
  EXPECT_DOUBLE_EQ(course::median({1.0, 1.1, 0.9, 1.0, 1000.0}), 1.0);
}

TEST(Stats, MedianOfNothingThrows) { EXPECT_THROW(course::median({}), std::invalid_argument); }
