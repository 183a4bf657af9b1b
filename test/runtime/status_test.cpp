#include "distrt/status.h"

#include <gtest/gtest.h>

namespace distrt {
namespace {

Status Fails() { return InvalidArgumentError("bad value ", 42); }
Status Propagates() {
  DISTRT_RETURN_IF_ERROR(Fails());
  return InternalError("not reached");
}
StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError(x, " is odd");
  return x / 2;
}
Status UseAssign(int x, int* out) {
  DISTRT_ASSIGN_OR_RETURN(*out, Half(x));
  return OkStatus();
}

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.message(), "");
}

TEST(Status, ErrorCarriesCodeAndMessage) {
  Status s = Fails();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad value 42");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: bad value 42");
}

TEST(Status, ReturnIfErrorPropagates) {
  Status s = Propagates();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad value 42");
}

TEST(Status, WithContextPrefixes) {
  Status s = Fails().WithContext("rank 3");
  EXPECT_EQ(s.message(), "rank 3: bad value 42");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(OkStatus().WithContext("x").ok());
}

TEST(Status, StatusOrValueAndError) {
  StatusOr<int> a = Half(8);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 4);
  StatusOr<int> b = Half(7);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "7 is odd");
  int out = 0;
  EXPECT_TRUE(UseAssign(10, &out).ok());
  EXPECT_EQ(out, 5);
  EXPECT_EQ(UseAssign(3, &out).code(), StatusCode::kInvalidArgument);
}

TEST(Status, StatusOrFromOkStatusIsAnError) {
  StatusOr<int> s = OkStatus();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
}

TEST(Status, CodeNames) {
  EXPECT_STREQ(StatusCodeName(StatusCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(StatusCodeName(StatusCode::kAborted), "ABORTED");
  EXPECT_STREQ(StatusCodeName(StatusCode::kDataLoss), "DATA_LOSS");
}

}  // namespace
}  // namespace distrt
