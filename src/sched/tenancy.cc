#include "seedance/sched/tenancy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"

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
  // Group the eligible candidates by node with one counting sort, then search node by node.
  const size_t nodes = free.size();
  auto eligible = [&](const VictimCandidate& c) {
    return c.priority < priority && !c.protected_pod && c.node >= 0 &&
           static_cast<size_t>(c.node) < nodes;
  };
  std::vector<size_t> start(nodes + 1, 0);
  for (const VictimCandidate& c : running) {
    if (eligible(c)) ++start[static_cast<size_t>(c.node) + 1];
  }
  for (size_t n = 0; n < nodes; ++n) start[n + 1] += start[n];
  std::vector<VictimCandidate> flat(start.back());
  std::vector<size_t> fill(start.begin(), start.end() - 1);
  for (const VictimCandidate& c : running) {
    if (eligible(c)) flat[fill[static_cast<size_t>(c.node)]++] = c;
  }
  VictimSearch search(need);
  for (size_t n = 0; n < nodes; ++n) {
    if (start[n + 1] == start[n]) continue;
    search.Node(static_cast<int32_t>(n), free[n],
                std::span<const VictimCandidate>(flat.data() + start[n], start[n + 1] - start[n]));
  }
  return search.TakeBest();
}

bool VictimSearch::RulesOut(int64_t free, int64_t largest, int32_t lowest, double least) const {
  if (best_.node < 0 || rule_ != VictimRule::kFewestVictims) return false;
  if (largest <= 0) return true;  // evicting frees nothing
  // At least ceil(gap / largest) victims are needed, each of priority >= lowest.
  const int64_t gap = need_ - free;
  const size_t at_least = static_cast<size_t>((gap + largest - 1) / largest);
  const size_t best_count = best_.victims.size();
  if (at_least != best_count) return at_least > best_count;
  if (lowest != best_.max_priority) return lowest > best_.max_priority;
  // Only a set of `at_least` victims, all of priority `lowest`, ties so far; each loses at least
  // `least`. Summed in the same order of operations as a real set's total, the bound is at most
  // any such total (rounding is monotone).
  double bound = 0;
  for (size_t k = 0; k < at_least; ++k) bound += least;
  // On equal totals the lower node wins, and best_ came from an earlier node.
  return bound >= best_.lost_gpu_s;
}

bool VictimSearch::CannotWin(int64_t free, std::span<const VictimCandidate> eligible) const {
  if (best_.node < 0) return false;
  int64_t largest = 0;
  int32_t lowest = std::numeric_limits<int32_t>::max();
  for (const VictimCandidate& c : eligible) {
    largest = std::max(largest, c.gpus);
    lowest = std::min(lowest, c.priority);
  }
  // The least lost work among the lowest-priority candidates (the only ones a tie can hold).
  double least = std::numeric_limits<double>::infinity();
  for (const VictimCandidate& c : eligible) {
    if (c.priority == lowest) least = std::min(least, c.lost_gpu_s);
  }
  return RulesOut(free, largest, lowest, least);
}

void VictimSearch::Node(int32_t node, int64_t free, std::span<const VictimCandidate> eligible) {
  SEEDANCE_CHECK(node > last_node_) << "VictimSearch: node " << node << " after node " << last_node_
                                    << " (nodes must come in ascending order)";
  last_node_ = node;
  if (free >= need_ || eligible.empty()) return;  // room without eviction is not preemption
  int64_t room = free;
  for (const VictimCandidate& c : eligible) room += c.gpus;
  if (room < need_) return;
  if (rule_ == VictimRule::kFewestVictims && CannotWin(free, eligible)) return;
  order_.clear();
  for (const VictimCandidate& c : eligible) order_.push_back(&c);
  Choose(free);
  // Compare before building: under kFewestVictims most nodes lose on the victim count alone.
  if (rule_ == VictimRule::kFewestVictims && best_.node >= 0 &&
      chosen_.size() > best_.victims.size()) {
    return;
  }
  VictimSet set;
  set.node = node;
  set.max_priority = std::numeric_limits<int32_t>::min();
  for (const VictimCandidate* p : chosen_) {
    set.lost_gpu_s += p->lost_gpu_s;
    set.max_priority = std::max(set.max_priority, p->priority);
  }
  if (!Beats(set)) return;
  for (const VictimCandidate* p : chosen_) set.victims.push_back(p->id);
  best_ = std::move(set);
}

void VictimSearch::Choose(int64_t free) {
  if (rule_ == VictimRule::kFewestVictims) {
    std::sort(order_.begin(), order_.end(), [](const VictimCandidate* a, const VictimCandidate* b) {
      if (a->priority != b->priority) return a->priority < b->priority;
      if (a->lost_gpu_s != b->lost_gpu_s) return a->lost_gpu_s < b->lost_gpu_s;
      return a->id < b->id;
    });
  } else {
    std::sort(order_.begin(), order_.end(), [](const VictimCandidate* a, const VictimCandidate* b) {
      if (a->lost_gpu_s != b->lost_gpu_s) return a->lost_gpu_s < b->lost_gpu_s;
      if (a->placed_at_s != b->placed_at_s) return a->placed_at_s > b->placed_at_s;
      return a->id < b->id;
    });
  }
  chosen_.clear();
  int64_t freed = free;
  for (auto it = order_.begin(); it != order_.end() && freed < need_; ++it) {
    freed += (*it)->gpus;
    chosen_.push_back(*it);
  }
  if (rule_ != VictimRule::kFewestVictims) return;
  // A victim taken early may be unneeded once a larger one is in (kube-scheduler's "reprieve"):
  // give back, most valuable first, every victim the others make room without.
  for (size_t k = chosen_.size(); k-- > 0;) {
    if (freed - chosen_[k]->gpus >= need_) {
      freed -= chosen_[k]->gpus;
      chosen_.erase(chosen_.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
}

bool VictimSearch::Beats(const VictimSet& set) const {
  if (best_.node < 0) return true;
  // best_ came from an earlier node, so it wins every tie.
  if (rule_ == VictimRule::kLeastLostWork) {
    return set.lost_gpu_s < best_.lost_gpu_s ||
           (set.lost_gpu_s == best_.lost_gpu_s && chosen_.size() < best_.victims.size());
  }
  return chosen_.size() < best_.victims.size() || set.max_priority < best_.max_priority ||
         (set.max_priority == best_.max_priority && set.lost_gpu_s < best_.lost_gpu_s);
}

}  // namespace seedance::sched
