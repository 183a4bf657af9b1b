// EXPECT_HAS(str, sub): the test expects `sub` in the message `str`, and
// prints both when it is not there.
#ifndef DISTRT_TEST_EXPECT_HAS_H_
#define DISTRT_TEST_EXPECT_HAS_H_

#include <gtest/gtest.h>

#include <string>

#define EXPECT_HAS(str, sub)                               \
  EXPECT_NE(std::string(str).find(sub), std::string::npos) \
      << "'" << (str) << "' lacks '" << (sub) << "'"

#endif  // DISTRT_TEST_EXPECT_HAS_H_
