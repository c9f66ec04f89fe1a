#include "seedance/sched/tenancy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace seedance::sched {
namespace {

// Shares are real numbers; a comparison this close counts as equal.
constexpr double kEps = 1e-9;

absl::Status CheckSpec(const QueueSpec& s) {
  if (s.name.empty()) return absl::InvalidArgumentError("queue: name must not be empty");
  const std::string where = absl::StrCat("queue '", s.name, "': ");
  if (!(s.weight > 0) || s.weight > 1e6) {
    return absl::InvalidArgumentError(absl::StrCat(where, "weight must be in (0, 1000000]"));
  }
  for (size_t r = 0; r < kQueueResources; ++r) {
    const char* res = QueueResourceNames()[r];
    if (!(s.guaranteed[r] >= 0) || std::isinf(s.guaranteed[r])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "guaranteed ", res, " must be a finite number >= 0"));
    }
    if (!(s.limit[r] >= s.guaranteed[r])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "limit ", res, " must be >= its guarantee"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const std::array<const char*, kQueueResources>& QueueResourceNames() {
  static const std::array<const char*, kQueueResources> names = {"gpus", "gpu_milli",
                                                                 "cpu_milli", "memory_mib"};
  return names;
}

absl::StatusOr<QueueTree> QueueTree::Build(const std::vector<QueueSpec>& specs,
                                           const Resources& capacity) {
  if (specs.size() > kMaxQueues) {
    return absl::InvalidArgumentError(absl::StrCat("more than ", kMaxQueues, " queues"));
  }
  QueueTree tree;
  tree.capacity_ = capacity;
  std::unordered_map<std::string, int> index;
  for (const QueueSpec& s : specs) {
    if (absl::Status st = CheckSpec(s); !st.ok()) return st;
    if (!index.emplace(s.name, static_cast<int>(tree.nodes_.size())).second) {
      return absl::InvalidArgumentError(absl::StrCat("queue '", s.name, "': defined twice"));
    }
    tree.nodes_.push_back({s, -1, {}, {}, {}});
    for (size_t r = 0; r < kQueueResources; ++r) {
      tree.managed_[r] = tree.managed_[r] || s.guaranteed[r] > 0 || !std::isinf(s.limit[r]);
    }
  }
  for (size_t q = 0; q < tree.nodes_.size(); ++q) {
    const std::string& parent = tree.nodes_[q].spec.parent;
    if (parent.empty()) {
      tree.roots_.push_back(static_cast<int>(q));
      continue;
    }
    auto it = index.find(parent);
    if (it == index.end()) {
      return absl::InvalidArgumentError(absl::StrCat("queue '", tree.nodes_[q].spec.name,
                                                     "': parent '", parent, "' is not a queue"));
    }
    tree.nodes_[q].parent = it->second;
    tree.nodes_[it->second].children.push_back(static_cast<int>(q));
  }
  for (size_t q = 0; q < tree.nodes_.size(); ++q) {
    int depth = 0;
    for (int p = tree.nodes_[q].parent; p >= 0; p = tree.nodes_[p].parent) {
      if (++depth > kMaxQueueDepth) {
        return absl::InvalidArgumentError(
            absl::StrCat("queue '", tree.nodes_[q].spec.name, "': its parents form a cycle or ",
                         "nest deeper than ", kMaxQueueDepth, " levels"));
      }
    }
  }
  return tree;
}

int QueueTree::Find(const std::string& name) const {
  for (size_t q = 0; q < nodes_.size(); ++q) {
    if (nodes_[q].spec.name == name) return static_cast<int>(q);
  }
  return -1;
}

void QueueTree::AddUp(int leaf, const Resources& delta, bool pending) {
  for (int q = leaf; q >= 0; q = nodes_[q].parent) {
    Resources& r = pending ? nodes_[q].pending : nodes_[q].used;
    for (size_t i = 0; i < kQueueResources; ++i) r[i] += delta[i];
  }
}

void QueueTree::SetUsage(int leaf, const Resources& used) {
  Resources delta{};
  for (size_t i = 0; i < kQueueResources; ++i) delta[i] = used[i] - nodes_[leaf].used[i];
  AddUp(leaf, delta, false);
}

void QueueTree::SetPending(int leaf, const Resources& pending) {
  Resources delta{};
  for (size_t i = 0; i < kQueueResources; ++i) delta[i] = pending[i] - nodes_[leaf].pending[i];
  AddUp(leaf, delta, true);
}

void QueueTree::Divide(const std::vector<int>& children, const Resources& share,
                       std::vector<Resources>* out) const {
  const size_t n = children.size();
  for (size_t r = 0; r < kQueueResources; ++r) {
    std::vector<double> cap(n), got(n);
    double guaranteed = 0;
    for (size_t i = 0; i < n; ++i) {
      const Node& c = nodes_[children[i]];
      cap[i] = std::min(c.used[r] + c.pending[r], c.spec.limit[r]);
      got[i] = std::min(c.spec.guaranteed[r], cap[i]);
      guaranteed += got[i];
    }
    double rest = share[r] - guaranteed;
    if (rest < 0) {  // over-committed guarantees: scaled down alike
      for (double& g : got) g *= share[r] / guaranteed;
      rest = 0;
    }
    // Water-filling by weight; each round saturates at least one child or hands out the rest.
    std::vector<bool> active(n);
    for (size_t i = 0; i < n; ++i) active[i] = got[i] + kEps < cap[i];
    while (rest > kEps) {
      double weights = 0;
      for (size_t i = 0; i < n; ++i) weights += active[i] ? nodes_[children[i]].spec.weight : 0;
      if (weights == 0) break;
      bool saturated = false;
      for (size_t i = 0; i < n; ++i) {
        if (!active[i]) continue;
        const double give = rest * nodes_[children[i]].spec.weight / weights;
        if (got[i] + give + kEps >= cap[i]) {
          rest -= cap[i] - got[i];
          got[i] = cap[i];
          active[i] = false;
          saturated = true;
        }
      }
      if (saturated) continue;
      for (size_t i = 0; i < n; ++i) {
        if (active[i]) got[i] += rest * nodes_[children[i]].spec.weight / weights;
      }
      rest = 0;
    }
    for (size_t i = 0; i < n; ++i) (*out)[children[i]][r] = got[i];
  }
  for (int c : children) Divide(nodes_[c].children, (*out)[c], out);
}

std::vector<Resources> QueueTree::FairShares() const {
  std::vector<Resources> shares(nodes_.size(), Resources{});
  Divide(roots_, capacity_, &shares);
  return shares;
}

double QueueTree::DominantShare(int q) const {
  double dominant = 0;
  for (size_t r = 0; r < kQueueResources; ++r) {
    if (capacity_[r] > 0) dominant = std::max(dominant, nodes_[q].used[r] / capacity_[r]);
  }
  return dominant / nodes_[q].spec.weight;
}

int QueueTree::NextByDrf(const std::vector<int>& candidates) const {
  int best = -1;
  for (int q : candidates) {
    if (best < 0 || DominantShare(q) < DominantShare(best) - kEps ||
        (std::abs(DominantShare(q) - DominantShare(best)) <= kEps && q < best)) {
      best = q;
    }
  }
  return best;
}

bool QueueTree::MayReclaim(int leaf, const Resources& request,
                           const std::vector<Resources>& shares) const {
  for (int q = leaf; q >= 0; q = nodes_[q].parent) {
    for (size_t r = 0; r < kQueueResources; ++r) {
      if (managed_[r] && nodes_[q].used[r] + request[r] > shares[q][r] + kEps) return false;
    }
  }
  return true;
}

bool QueueTree::OverFairShare(int leaf, const std::vector<Resources>& shares) const {
  for (int q = leaf; q >= 0; q = nodes_[q].parent) {
    for (size_t r = 0; r < kQueueResources; ++r) {
      if (managed_[r] && nodes_[q].used[r] > shares[q][r] + kEps) return true;
    }
  }
  return false;
}

VictimSet MinimalVictims(int32_t priority, int64_t need, const std::vector<int64_t>& free,
                         const std::vector<VictimCandidate>& running) {
  // One pass: what eviction could free on each node. Only nodes where it is enough are looked
  // at further, so the cost is one pass over the pods plus the few nodes that qualify.
  const size_t nodes = free.size();
  std::vector<int64_t> room(free.begin(), free.end());
  std::vector<uint32_t> count(nodes, 0);
  auto eligible = [&](const VictimCandidate& c) {
    return c.priority < priority && !c.protected_pod && c.node >= 0 &&
           static_cast<size_t>(c.node) < nodes;
  };
  for (const VictimCandidate& c : running) {
    if (!eligible(c)) continue;
    room[c.node] += c.gpus;
    ++count[c.node];
  }
  // Nodes that qualify: room enough with eviction, and not already enough without.
  std::vector<int32_t> qualify;
  for (size_t n = 0; n < nodes; ++n) {
    if (room[n] >= need && free[n] < need && count[n] > 0) qualify.push_back(static_cast<int32_t>(n));
  }
  VictimSet best;
  if (qualify.empty()) return best;
  // The qualifying nodes' pods in one flat array, node by node (a counting sort: no allocation
  // per node).
  std::vector<int32_t> slot(nodes, -1);
  std::vector<size_t> start(qualify.size() + 1, 0);
  for (size_t i = 0; i < qualify.size(); ++i) {
    slot[qualify[i]] = static_cast<int32_t>(i);
    start[i + 1] = start[i] + count[qualify[i]];
  }
  std::vector<const VictimCandidate*> flat(start.back());
  std::vector<size_t> fill(start.begin(), start.end() - 1);
  for (const VictimCandidate& c : running) {
    if (eligible(c) && slot[c.node] >= 0) flat[fill[slot[c.node]]++] = &c;
  }
  auto cheaper = [](const VictimCandidate* a, const VictimCandidate* b) {
    if (a->priority != b->priority) return a->priority < b->priority;
    if (a->lost_gpu_s != b->lost_gpu_s) return a->lost_gpu_s < b->lost_gpu_s;
    return a->id < b->id;
  };
  std::vector<const VictimCandidate*> chosen;
  for (size_t i = 0; i < qualify.size(); ++i) {
    const int32_t node = qualify[i];
    const auto first = flat.begin() + static_cast<std::ptrdiff_t>(start[i]);
    const auto last = flat.begin() + static_cast<std::ptrdiff_t>(start[i + 1]);
    std::sort(first, last, cheaper);
    chosen.clear();
    int64_t freed = free[node];
    for (auto it = first; it != last && freed < need; ++it) {
      freed += (*it)->gpus;
      chosen.push_back(*it);
    }
    // A victim taken early may be unneeded once a larger one is in (kube-scheduler's "reprieve"):
    // give back, most valuable first, every victim the others make room without.
    for (size_t k = chosen.size(); k-- > 0;) {
      if (freed - chosen[k]->gpus >= need) {
        freed -= chosen[k]->gpus;
        chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    // Compare before building: most nodes lose on the victim count alone.
    if (best.node >= 0 && chosen.size() > best.victims.size()) continue;
    VictimSet set;
    set.node = node;
    set.max_priority = std::numeric_limits<int32_t>::min();
    for (const VictimCandidate* p : chosen) {
      set.lost_gpu_s += p->lost_gpu_s;
      set.max_priority = std::max(set.max_priority, p->priority);
    }
    const bool wins =
        best.node < 0 || chosen.size() < best.victims.size() ||
        set.max_priority < best.max_priority ||
        (set.max_priority == best.max_priority &&
         (set.lost_gpu_s < best.lost_gpu_s ||
          (set.lost_gpu_s == best.lost_gpu_s && node < best.node)));
    if (!wins) continue;
    for (const VictimCandidate* p : chosen) set.victims.push_back(p->id);
    best = std::move(set);
  }
  return best;
}

}  // namespace seedance::sched
