#include "batch_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace seedance::ha {
namespace {

store::Batch Sample() {
  store::Batch b;
  b.put_nodes = {{"n0", "{\"cpu_milli\":1}", true, 3}};
  b.delete_nodes = {"gone"};
  b.put_pods = {{"u1", "ns", "p1", "{}", "Bound", "n0", "[{\"index\":0,\"milli\":500}]", 4}};
  b.delete_pods = {"u0"};
  b.events = {{4, "PodBound", std::string("{\"x\":\"\0\xff\"}", 10)}};
  b.revision = 4;
  b.policy_text = "profiles: []\n";
  return b;
}

TEST(BatchCodecTest, RoundTripsEveryField) {
  absl::StatusOr<store::Batch> got = DecodeBatch(EncodeBatch(Sample()));
  ASSERT_TRUE(got.ok()) << got.status();
  const store::Batch want = Sample();
  ASSERT_EQ(got->put_nodes.size(), 1u);
  EXPECT_EQ(got->put_nodes[0].spec_json, want.put_nodes[0].spec_json);
  EXPECT_TRUE(got->put_nodes[0].cordoned);
  EXPECT_EQ(got->delete_nodes, want.delete_nodes);
  ASSERT_EQ(got->put_pods.size(), 1u);
  EXPECT_EQ(got->put_pods[0].gpus_json, want.put_pods[0].gpus_json);
  EXPECT_EQ(got->put_pods[0].node, "n0");
  EXPECT_EQ(got->delete_pods, want.delete_pods);
  ASSERT_EQ(got->events.size(), 1u);
  EXPECT_EQ(got->events[0].object_json, want.events[0].object_json);
  EXPECT_EQ(got->revision, 4);
  EXPECT_EQ(got->policy_text, want.policy_text);
}

store::Batch WithObjects() {
  store::Batch b = Sample();
  b.put_objects = {{"experiment", "exp/\xff", std::string("{\"a\":\"\0\"}", 9), 4},
                   {"experiment-events", "e", "[]", 2}};
  b.delete_objects = {{"experiment", "old"}};
  b.delete_object_prefixes = {{"experiment-events", "old/"}, {"x", "\xff"}};
  return b;
}

TEST(BatchCodecTest, RoundTripsObjects) {
  const store::Batch want = WithObjects();
  const std::string bytes = EncodeBatch(want);
  EXPECT_EQ(bytes.substr(0, 4), "SDB2");
  absl::StatusOr<store::Batch> got = DecodeBatch(bytes);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->put_objects.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got->put_objects[i].kind, want.put_objects[i].kind);
    EXPECT_EQ(got->put_objects[i].key, want.put_objects[i].key);
    EXPECT_EQ(got->put_objects[i].json, want.put_objects[i].json);
    EXPECT_EQ(got->put_objects[i].revision, want.put_objects[i].revision);
  }
  EXPECT_EQ(got->delete_objects, want.delete_objects);
  EXPECT_EQ(got->delete_object_prefixes, want.delete_object_prefixes);
  EXPECT_EQ(got->put_pods.size(), 1u);
  EXPECT_EQ(got->policy_text, want.policy_text);
  for (size_t cut : {size_t{4}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_EQ(DecodeBatch(bytes.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss)
        << cut;
  }
  EXPECT_EQ(DecodeBatch(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
}

// A batch without objects is written as before objects existed (SDB1), so a replica of an older
// seedance reads it; an SDB1 entry reads back with no objects.
TEST(BatchCodecTest, ABatchWithoutObjectsIsStillSdb1) {
  const std::string bytes = EncodeBatch(Sample());
  EXPECT_EQ(bytes.substr(0, 4), "SDB1");
  store::Batch b = WithObjects();
  b.put_objects.clear();
  b.delete_objects.clear();
  EXPECT_EQ(EncodeBatch(b).substr(0, 4), "SDB2");  // a prefix delete alone is an object change
  b.delete_object_prefixes.clear();
  EXPECT_EQ(EncodeBatch(b), bytes);
  absl::StatusOr<store::Batch> got = DecodeBatch(bytes);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->put_objects.empty());
  EXPECT_TRUE(got->delete_object_prefixes.empty());
  // SDB1 bytes under the SDB2 magic lack the objects: refused, not read as empty.
  EXPECT_EQ(DecodeBatch("SDB2" + bytes.substr(4)).status().code(), absl::StatusCode::kDataLoss);
}

TEST(BatchCodecTest, NoPolicyStaysNoPolicy) {
  store::Batch b;
  b.revision = 9;
  absl::StatusOr<store::Batch> got = DecodeBatch(EncodeBatch(b));
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->policy_text.has_value());
  EXPECT_TRUE(got->empty());
}

TEST(BatchCodecTest, RefusesTornForeignAndOverlongInput) {
  const std::string bytes = EncodeBatch(Sample());
  for (size_t cut : {size_t{0}, size_t{3}, size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_EQ(DecodeBatch(bytes.substr(0, cut)).status().code(), absl::StatusCode::kDataLoss)
        << cut;
  }
  EXPECT_EQ(DecodeBatch("SQLite format 3").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeBatch(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  std::string huge = "SDB1" + std::string(8, '\xff');  // a count no input can hold
  EXPECT_EQ(DecodeBatch(huge).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeBatch("SDB3" + bytes.substr(4)).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace seedance::ha
