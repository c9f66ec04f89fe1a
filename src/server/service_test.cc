// The service's own invariant: a batch whose commit fails is never acknowledged and the process
// stops (restart recovers the last durable state, see docs/server.md). The failure here is a
// real one: another SQLite connection holds the database's write lock (an operator's sqlite3
// shell in a transaction, say) longer than the store's busy timeout (5 s), so Commit fails.
#include "seedance/server/service.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace seedance::server {
namespace {

namespace fs = std::filesystem;

core::NodeSpec Node(std::string name) {
  core::NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = 64000;
  n.memory_mib = 262144;
  n.num_gpus = 1;
  n.gpu_model = "A100";
  return n;
}

// Starts a service, locks its database from a second connection, and asks for a change.
void CommitUnderAForeignWriteLock(const std::string& dir) {
  ServiceOptions o;
  o.state_dir = dir;
  o.scheduler.default_profile.policy = "bestfit";
  absl::StatusOr<std::unique_ptr<Service>> service = Service::Start(o);
  if (!service.ok()) {
    fprintf(stderr, "start failed: %s\n", std::string(service.status().message()).c_str());
    return;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open((dir + "/state.db").c_str(), &db) != SQLITE_OK ||
      sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK) {
    fprintf(stderr, "cannot lock the database\n");
    return;
  }
  (void)(*service)->Preload({Node("n0")});  // the loop thread dies in the commit
  fprintf(stderr, "the commit did not fail\n");
}

TEST(ServiceDeathTest, AFailedCommitStopsTheProcessBeforeAnyReply) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the service runs threads
  const fs::path dir = fs::temp_directory_path() / ("seedance-service-" + std::to_string(getpid()));
  fs::remove_all(dir);
  EXPECT_DEATH(CommitUnderAForeignWriteLock(dir.string()),
               "state commit failed; restart recovers the last durable state: .*lock");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace seedance::server
