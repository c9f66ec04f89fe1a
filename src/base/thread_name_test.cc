#include "seedance/base/thread_name.h"

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

TEST(ThreadNameTest, NamesTheCallingThreadOnlyAndCutsAt15Bytes) {
  std::string inside, longer;
  const std::string outside = ThisThreadName();
  std::thread t([&] {
    NameThisThread("client-loop");
    inside = ThisThreadName();
    NameThisThread("a-name-longer-than-fifteen");
    longer = ThisThreadName();
  });
  t.join();
  EXPECT_EQ(inside, "client-loop");
  EXPECT_EQ(longer, "a-name-longer-t");
  EXPECT_EQ(ThisThreadName(), outside);
}

}  // namespace
}  // namespace seedance::base
