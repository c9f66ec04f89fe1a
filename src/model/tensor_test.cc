#include "seedance/model/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops.h"
#include "seedance/model/float_formats.h"

namespace seedance::model {
namespace {

TEST(TensorTest, HoldsZeroFilledElementsOfItsShape) {
  Tensor t(DataType::kInt64, {2, 3});
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.bytes(), 48u);
  EXPECT_EQ(t.Describe(), "int64[2,3]");
  EXPECT_EQ(t.ToInt64Vector(), std::vector<int64_t>(6, 0));
  const Tensor scalar = Tensor::Scalar<float>(2.5f);
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.size(), 1);
  EXPECT_EQ(scalar.AsDouble(0), 2.5);
  EXPECT_EQ(Tensor(DataType::kFloat, {4, 0}).size(), 0);
}

TEST(TensorTest, ReshapeKeepsTheElements) {
  const std::vector<int32_t> v = {1, 2, 3, 4, 5, 6};
  const Tensor t = Tensor::From<int32_t>({2, 3}, v).Reshaped({3, 2});
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.ToInt64Vector(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(TensorTest, ElementCountRefusesNegativeAndHugeShapes) {
  EXPECT_FALSE(ElementCount(std::vector<int64_t>{2, -1}).ok());
  EXPECT_FALSE(ElementCount(std::vector<int64_t>{int64_t{1} << 30, int64_t{1} << 30}).ok());
  EXPECT_EQ(*ElementCount(std::vector<int64_t>{int64_t{1} << 40, 0}), 0);
  EXPECT_EQ(*ElementCount(std::vector<int64_t>{}), 1);
}

TEST(TensorTest, ConvertsElementsForIndexing) {
  const std::vector<double> v = {-2.7, 1e300, std::nan("")};
  const Tensor t = Tensor::From<double>({3}, v);
  EXPECT_EQ(t.AsInt64(0), -2);
  EXPECT_EQ(t.AsInt64(1), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.AsInt64(2), std::numeric_limits<int64_t>::min());
  const std::vector<uint64_t> u = {~uint64_t{0}};
  EXPECT_EQ(Tensor::From<uint64_t>({1}, u).AsInt64(0), std::numeric_limits<int64_t>::max());
}

struct HalfCase {
  float in;
  uint16_t bits;
};

TEST(FloatFormatsTest, Float16RoundsToNearestEvenAndOverflowsToInfinity) {
  const HalfCase cases[] = {
      {1.0f, 0x3c00},
      {65504.0f, 0x7bff},   // the largest finite
      {65519.99f, 0x7bff},  // below the midpoint to infinity
      {65520.0f, 0x7c00},   // the midpoint rounds to even: infinity
      {1e10f, 0x7c00},
      {-1e10f, 0xfc00},
      {1.0f + 1.0f / 2048, 0x3c00},     // a tie between 1 and 1+2^-10: even (1)
      {1.0f + 3.0f / 2048, 0x3c02},     // a tie between 1+2^-10 and 1+2^-9: even (2^-9)
      {std::ldexp(1.0f, -24), 0x0001},  // the smallest subnormal
      {std::ldexp(1.0f, -25), 0x0000},  // half of it: a tie, to even (0)
      {std::ldexp(1.5f, -25), 0x0001},
      {std::ldexp(3.0f, -25), 0x0002},  // 1.5 subnormal ulps: tie, to even (2)
      {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7c00},
  };
  for (const HalfCase& c : cases) {
    EXPECT_EQ(ToFloat16(c.in).bits, c.bits) << c.in;
  }
  EXPECT_TRUE(std::isnan(FromFloat16(ToFloat16(std::nanf("")))));
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {  // every finite FP16 survives the round trip
    const Float16 h{static_cast<uint16_t>(bits)};
    ASSERT_EQ(ToFloat16(FromFloat16(h)).bits, bits);
  }
}

TEST(FloatFormatsTest, BFloat16KeepsTheTopBitsRoundedToNearestEven) {
  EXPECT_EQ(ToBFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(ToBFloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);        // tie, to even
  EXPECT_EQ(ToBFloat16(1.0f + std::ldexp(3.0f, -8)).bits, 0x3f82);        // tie, to even
  EXPECT_EQ(ToBFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);  // rounds up to inf
  EXPECT_TRUE(std::isnan(RoundToBFloat16(std::nanf(""))));
  EXPECT_EQ(RoundToBFloat16(3.140625f), 3.140625f);
}

TEST(FloatFormatsTest, Float8E4M3SaturatesAndRoundsToNearestEven) {
  EXPECT_EQ(ToFloat8E4M3(448.0f), 0x7e);
  EXPECT_EQ(ToFloat8E4M3(1e6f), 0x7e);  // saturates
  EXPECT_EQ(ToFloat8E4M3(-1e6f), 0xfe);
  EXPECT_EQ(ToFloat8E4M3(1.0f), 0x38);
  EXPECT_EQ(RoundToFloat8E4M3(1.0625f), 1.0f);   // tie between 1 and 1.125: even (1)
  EXPECT_EQ(RoundToFloat8E4M3(1.1875f), 1.25f);  // tie between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(RoundToFloat8E4M3(std::ldexp(1.0f, -9)), std::ldexp(1.0f, -9));  // smallest
  EXPECT_EQ(RoundToFloat8E4M3(std::ldexp(1.0f, -10)), 0.0f);                 // a tie, to even (0)
  EXPECT_TRUE(std::isnan(RoundToFloat8E4M3(std::nanf(""))));
  for (int bits = 0; bits < 0x7f; ++bits) {  // every finite value survives the round trip
    ASSERT_EQ(ToFloat8E4M3(FromFloat8E4M3(static_cast<uint8_t>(bits))), bits);
  }
}

TEST(BroadcastTest, FollowsNumpyRules) {
  const std::vector<int64_t> a = {2, 1, 3}, b = {4, 1};
  EXPECT_EQ(*ops::BroadcastShapes(a, b), (std::vector<int64_t>{2, 4, 3}));
  const std::vector<int64_t> c = {2, 3}, d = {3, 2};
  EXPECT_FALSE(ops::BroadcastShapes(c, d).ok());
  const std::vector<int64_t> in = {3}, out = {2, 3};
  EXPECT_EQ(ops::BroadcastIndex(in, out), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  const std::vector<int64_t> col = {2, 1};
  EXPECT_EQ(ops::BroadcastIndex(col, out), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(*ops::NormalizeAxis(-1, 3), 2);
  EXPECT_FALSE(ops::NormalizeAxis(3, 3).ok());
  EXPECT_FALSE(ops::NormalizeAxis(0, 0).ok());  // a scalar has no axis
}

using TensorDeathTest = ::testing::Test;

TEST(TensorDeathTest, ReadingElementsAsAnotherTypeIsCaught) {
  Tensor t(DataType::kFloat, {2});
  EXPECT_DEATH(t.data<int64_t>(), "DataTypeOf<T>\\(\\) == type_.*read as");
  const Tensor& ct = t;
  EXPECT_DEATH(ct.data<int64_t>(), "DataTypeOf<T>\\(\\) == type_.*read as");
}

TEST(TensorDeathTest, BrokenConstructionRequirementsAreCaught) {
  const std::vector<float> v = {1, 2, 3};
  EXPECT_DEATH(Tensor::From<float>({2}, v), "values.size\\(\\)\\) == t.size\\(\\).*values for");
  EXPECT_DEATH(Tensor(DataType::kString, {1}), "IsSupported\\(type_\\).*tensor of");
  EXPECT_DEATH(Tensor(DataType::kFloat, {-1}), "count.ok\\(\\).*tensor shape refused");
  EXPECT_DEATH(Tensor(DataType::kFloat, {2}).Reshaped({3}), "reshape of .* to");
}

TEST(TensorDeathTest, ElementsOutOfRangeAreCaught) {
  const Tensor t(DataType::kFloat, {2});
  EXPECT_DEATH(t.AsDouble(2), "i >= 0 && i < size_.*element");
  EXPECT_DEATH(t.AsInt64(-1), "i >= 0 && i < size_.*element");
}

TEST(TensorDeathTest, KernelHelpersRefuseBrokenRequirements) {
  Node node;
  node.op_type = "Add";
  const ops::OpContext ctx(node, 17, {nullptr});
  EXPECT_DEATH(ctx.input(0), "reads input .* it was not given");
  const std::vector<int64_t> in = {2, 3}, out = {3}, wide = {4, 3};
  EXPECT_DEATH(ops::BroadcastIndex(in, out), "in_shape.size\\(\\) <= out_shape.size\\(\\)");
  EXPECT_DEATH(ops::BroadcastIndex(in, wide), "in_shape\\[i\\] == 1.*does not broadcast to");
  EXPECT_DEATH(ops::VisitType(DataType::kString, [](auto) { return 0; }),
               "unreachable code reached");
  const std::vector<double> three = {1, 2, 3};
  EXPECT_DEATH(ops::WriteDoubles(DataType::kFloat, {2}, three), "values.size\\(\\).*values for");
  const Tensor t(DataType::kFloat, {4});
  const std::vector<int64_t> iter = {4}, one = {1}, none = {};
  EXPECT_DEATH(ops::StridedCopy(t, iter, 0, one, {3}), "Product\\(iter_shape\\) == out.size\\(\\)");
  EXPECT_DEATH(ops::StridedCopy(t, iter, 0, none, {4}),
               "iter_shape.size\\(\\) == strides.size\\(\\)");
}

}  // namespace
}  // namespace seedance::model
