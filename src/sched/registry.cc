#include "seedance/sched/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "policies.h"

namespace seedance::sched {

absl::Status Registry::Register(const std::string& name, PolicyFactory factory) {
  if (name.empty()) return absl::InvalidArgumentError("policy name is empty");
  if (!factory) return absl::InvalidArgumentError(absl::StrCat("policy '", name, "': no factory"));
  if (!factories_.emplace(name, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat("policy '", name, "' is already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Profile> Registry::Create(const std::string& name, const PolicyContext& ctx) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown policy '", name, "'; known: ", absl::StrJoin(Names(), ", ")));
  }
  return it->second(ctx);
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  return out;
}

const Registry& Registry::Builtins() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    // Registration of distinct literal names cannot fail.
    (void)r->Register("random", internal::MakeRandom);
    (void)r->Register("dotprod", internal::MakeDotProd);
    (void)r->Register("clustering", internal::MakeClustering);
    (void)r->Register("packing", internal::MakePacking);
    (void)r->Register("bestfit", internal::MakeBestFit);
    (void)r->Register("fgd", internal::MakeFgd);
    (void)r->Register("cas", internal::MakeCas);
    (void)r->Register("least-allocated", internal::MakeLeastAllocated);
    (void)r->Register("most-allocated", internal::MakeMostAllocated);
    return r;
  }();
  return *registry;
}

const std::vector<std::string>& ReferencePolicyNames() {
  static const std::vector<std::string> names = {"random",  "dotprod", "clustering",
                                                 "packing", "bestfit", "fgd"};
  return names;
}

}  // namespace seedance::sched
