#include "seedance/sched/framework.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seedance/base/check.h"
#include "seedance/sched/topology.h"

namespace seedance::sched {

namespace {

// Raises every score within `tolerance` of the best to the best (ScorePlugin::TieTolerance).
void RaiseTies(int64_t tolerance, std::span<int64_t> scores) {
  if (tolerance <= 0 || scores.empty()) return;
  const int64_t best = *std::max_element(scores.begin(), scores.end());
  const int64_t floor = best - tolerance;
  for (int64_t& v : scores) v = v >= floor ? best : v;
}

// The node with the highest value seen so far, the first in node order (lowest rank) among
// equals. The rank is read only on a tie.
struct BestInOrder {
  const int* rank;
  int node = -1;
  int64_t value = 0;
  int node_rank = 0;
  void Consider(int n, int64_t v) {
    if (node < 0 || v > value || (v == value && rank[n] < node_rank)) {
      value = v;
      node = n;
      node_rank = rank[n];
    }
  }
};

}  // namespace

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kError:
      return "Error";
    case Code::kWait:
      return "Wait";
  }
  return "Unknown";
}

size_t Framework::ShapeKeyHash::operator()(const ShapeKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.cpu_milli) * 0x9E3779B97F4A7C15ull;
  h ^= (static_cast<uint64_t>(k.num_gpu) << 32 | static_cast<uint32_t>(k.gpu_milli)) +
       0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= k.mask + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

Framework::Framework(Profile profile, FrameworkOptions options)
    : profile_(std::move(profile)), options_(std::move(options)), rng_(options_.seed) {
  cache_.resize(profile_.scores.size());
  cache_epoch_.assign(profile_.scores.size(), 0);
  cache_gen_.assign(profile_.scores.size(), 1);
  cycle_entries_.assign(profile_.scores.size(), nullptr);
  cycle_gen_.assign(profile_.scores.size(), 0);
}

std::vector<int> Framework::RandomNodeOrder(int num_nodes, uint64_t seed) {
  std::vector<int> order(num_nodes);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed ^ 0x5EEDA11CEull);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

void Framework::NotifyArrival(const core::PodShape& pod) {
  for (auto& o : profile_.observers) o->OnArrival(pod);
}

int Framework::ShapeId(const core::PodShape& pod) {
  ShapeKey key{pod.cpu_milli, pod.num_gpu, pod.gpu_milli, pod.gpu_model_mask};
  auto [it, inserted] = shape_ids_.emplace(key, static_cast<int>(shape_ids_.size()));
  return it->second;
}

int64_t Framework::Cached(CacheEntry& e, uint64_t stamp, ScorePlugin& plugin,
                          const CycleState& cycle, const core::ClusterState& state, int n) {
  if (e.stamp != stamp) {
    e.score = plugin.Score(cycle, state, n);
    e.stamp = stamp;
  }
  return e.score;
}

Framework::CacheEntry* Framework::CacheFor(size_t scorer, int shape_id) {
  std::vector<CacheEntry>& cache = cache_[scorer];
  const size_t need = (static_cast<size_t>(shape_id) + 1) * cache_nodes_;
  if (cache.size() < need) cache.resize(need + 8 * static_cast<size_t>(cache_nodes_));
  return cache.data() + static_cast<size_t>(shape_id) * cache_nodes_;
}

void Framework::SyncCacheTo(const core::ClusterState& state) {
  if (cache_nodes_ == state.num_nodes() && cache_state_ == &state) return;
  // Versions are per ClusterState object: scores made for another object (or size) are void.
  cache_nodes_ = state.num_nodes();
  cache_state_ = &state;
  for (auto& c : cache_) c.clear();
}

void Framework::PrepareScorers(CycleState& cycle, const core::ClusterState& state, int shape_id) {
  // Every PreScore runs before any Score, so a scorer may read what another's PreScore set.
  for (size_t s = 0; s < profile_.scores.size(); ++s) {
    ScorePlugin& plugin = *profile_.scores[s].plugin;
    plugin.PreScore(cycle, state);
    const bool cached = options_.score_cache && plugin.Cacheable();
    if (cached && plugin.Epoch() != cache_epoch_[s]) {
      cache_epoch_[s] = plugin.Epoch();
      ++cache_gen_[s];
    }
    cycle_entries_[s] = cached ? CacheFor(s, shape_id) : nullptr;
    cycle_gen_[s] = static_cast<uint64_t>(cache_gen_[s]) << 32;
  }
}

// The cached scorers' weighted sums first, then the uncached (bounded) scorers on the nodes
// those sums do not rule out: a node whose sum plus `slack` (the most the uncached scorers can
// add) is below the best sum cannot win.
int Framework::SelectBounded(const CycleState& cycle, const core::ClusterState& state,
                             int64_t slack) {
  const size_t num_scorers = profile_.scores.size();
  const size_t num_feasible = feasible_.size();
  if (num_feasible == 0) return -1;
  // Plain pointers in the loops: a score computed on a cache miss writes through references the
  // compiler cannot tell apart from these vectors, and would reload them on every node.
  const int* feasible = feasible_.data();
  // The best cached sum, taken in the last cached scorer's pass (0 if none is cached).
  int64_t top = 0;
  // Ties over scores_ of the cached scorer raise_from (-1: none) are raised in the compaction
  // below, where it is the only cached scorer and weighs >= 0, so that its raised best is the
  // best sum (cas's profile); partial_ is then not used.
  int raise_from = -1;
  int64_t raise_floor = 0, raise_best = 0;
  size_t num_cached = 0;
  bool raise_in_compaction = false;
  for (size_t s = 0; s < num_scorers; ++s) {
    if (cycle_entries_[s] == nullptr) continue;
    ++num_cached;
    raise_in_compaction =
        profile_.scores[s].plugin->TieTolerance() > 0 && profile_.scores[s].weight >= 0;
  }
  raise_in_compaction = raise_in_compaction && num_cached == 1;
  if (!raise_in_compaction) partial_.assign(num_feasible, 0);
  int64_t* partial = partial_.data();
  for (size_t s = 0; s < num_scorers; ++s) {
    CacheEntry* entries = cycle_entries_[s];
    if (entries == nullptr) continue;
    ScorePlugin& plugin = *profile_.scores[s].plugin;
    const int64_t w = profile_.scores[s].weight;
    const uint64_t gen = cycle_gen_[s];
    top = std::numeric_limits<int64_t>::min();
    if (const int64_t tolerance = plugin.TieTolerance(); tolerance > 0) {
      scores_.resize(num_feasible);
      int64_t best = std::numeric_limits<int64_t>::min();
      for (size_t i = 0; i < num_feasible; ++i) {
        const int n = feasible[i];
        scores_[i] = Cached(entries[n], gen | state.version(n), plugin, cycle, state, n);
        best = std::max(best, scores_[i]);
      }
      if (raise_in_compaction) {
        raise_from = static_cast<int>(s);
        raise_floor = best - tolerance;
        raise_best = best;
        top = w * best;
        continue;
      }
      RaiseTies(tolerance, scores_);
      for (size_t i = 0; i < num_feasible; ++i) {
        partial[i] += w * scores_[i];
        top = std::max(top, partial[i]);
      }
      continue;
    }
    for (size_t i = 0; i < num_feasible; ++i) {
      const int n = feasible[i];
      partial[i] += w * Cached(entries[n], gen | state.version(n), plugin, cycle, state, n);
      top = std::max(top, partial[i]);
    }
  }
  // Compacted without branches: most nodes pass, in no predictable pattern.
  contenders_.resize(num_feasible);
  contender_totals_.resize(num_feasible);
  int* contenders = contenders_.data();
  int64_t* totals = contender_totals_.data();
  size_t kept = 0;
  if (raise_from >= 0) {
    const int64_t w = profile_.scores[static_cast<size_t>(raise_from)].weight;
    const int64_t* raw = scores_.data();
    for (size_t i = 0; i < num_feasible; ++i) {
      const int64_t sum = w * (raw[i] >= raise_floor ? raise_best : raw[i]);
      contenders[kept] = feasible[i];
      totals[kept] = sum;
      kept += static_cast<size_t>(sum + slack >= top);
    }
  } else {
    for (size_t i = 0; i < num_feasible; ++i) {
      contenders[kept] = feasible[i];
      totals[kept] = partial[i];
      kept += static_cast<size_t>(partial[i] + slack >= top);
    }
  }
  contenders_.resize(kept);
  contender_totals_.resize(kept);
  contender_scores_.resize(kept);
  const int64_t* scores = contender_scores_.data();
  BestInOrder best{rank_.data()};
  size_t uncached_left = 0;
  for (size_t s = 0; s < num_scorers; ++s) uncached_left += cycle_entries_[s] == nullptr;
  if (uncached_left == 0) {
    for (size_t i = 0; i < kept; ++i) best.Consider(contenders[i], totals[i]);
    return best.node;
  }
  for (size_t s = 0; s < num_scorers; ++s) {
    if (cycle_entries_[s]) continue;
    ScorePlugin& plugin = *profile_.scores[s].plugin;
    plugin.ScoreBatch(cycle, state, contenders_, contender_scores_);
    const int64_t bound = plugin.ScoreBound();
    const int64_t w = profile_.scores[s].weight;
    const bool last = --uncached_left == 0;
    for (size_t i = 0; i < kept; ++i) {
      const int64_t x = scores[i];
      SEEDANCE_CHECK(x >= 0 && x < bound) << "score plugin '" << plugin.Name() << "' scored " << x
                                          << ", outside its bound [0, " << bound << ")";
      totals[i] += w * x;
      // The highest total, the first in node order among equals, in the same pass.
      if (last) best.Consider(contenders[i], totals[i]);
    }
  }
  return best.node;
}

// The common case (every reference policy), kept tight: plain pointers, since a score computed
// on a cache miss writes through references the compiler cannot tell apart from the vectors.
int Framework::SelectOneScorer(const CycleState& cycle, const core::ClusterState& state) {
  ScorePlugin& plugin = *profile_.scores[0].plugin;
  const int64_t w = profile_.scores[0].weight;
  const int* feasible = feasible_.data();
  const size_t num_feasible = feasible_.size();
  BestInOrder best{rank_.data()};
  if (CacheEntry* entries = cycle_entries_[0]) {
    const uint64_t gen = cycle_gen_[0];
    for (size_t i = 0; i < num_feasible; ++i) {
      const int n = feasible[i];
      best.Consider(n, w * Cached(entries[n], gen | state.version(n), plugin, cycle, state, n));
    }
  } else {
    for (size_t i = 0; i < num_feasible; ++i) {
      best.Consider(feasible[i], w * plugin.Score(cycle, state, feasible[i]));
    }
  }
  return best.node;
}

int Framework::SelectUnnormalized(const CycleState& cycle, const core::ClusterState& state) {
  const size_t num_scorers = profile_.scores.size();
  // Ties need each scorer's best first: the per-scorer passes (SelectBounded raises ties among
  // the cached scorers; an uncached scorer with a tolerance takes SelectNormalized's passes).
  bool ties = false, uncached_ties = false;
  for (size_t s = 0; s < num_scorers; ++s) {
    const bool has = profile_.scores[s].plugin->TieTolerance() > 0;
    ties = ties || has;
    uncached_ties = uncached_ties || (has && cycle_entries_[s] == nullptr);
  }
  if (uncached_ties || (num_scorers == 1 && ties)) return SelectNormalized(cycle, state);
  if (num_scorers == 1) return SelectOneScorer(cycle, state);
  // When every uncached scorer is bounded, score the cached ones first: a node whose cached sum
  // plus the most the uncached ones could add is below the best cached sum cannot win (the node
  // holding that sum totals at least as much), so its uncached scores are not computed.
  bool bounded = true;
  int64_t slack = 0;
  for (size_t s = 0; s < num_scorers && bounded; ++s) {
    if (cycle_entries_[s]) continue;
    const int64_t bound = profile_.scores[s].plugin->ScoreBound();
    const int64_t w = profile_.scores[s].weight;
    bounded = bound > 0 && w >= 0;
    slack += w * (bound - 1);
  }
  if (bounded) return SelectBounded(cycle, state, slack);
  if (ties) return SelectNormalized(cycle, state);
  BestInOrder best{rank_.data()};
  for (int n : feasible_) {
    int64_t v = 0;
    for (size_t s = 0; s < num_scorers; ++s) {
      ScorePlugin& plugin = *profile_.scores[s].plugin;
      CacheEntry* entries = cycle_entries_[s];
      const int64_t x =
          entries ? Cached(entries[n], cycle_gen_[s] | state.version(n), plugin, cycle, state, n)
                  : plugin.Score(cycle, state, n);
      v += profile_.scores[s].weight * x;
    }
    best.Consider(n, v);
  }
  return best.node;
}

int Framework::SelectNormalized(const CycleState& cycle, const core::ClusterState& state) {
  totals_.assign(feasible_.size(), 0);
  scores_.resize(feasible_.size());
  for (size_t s = 0; s < profile_.scores.size(); ++s) {
    ScorePlugin& plugin = *profile_.scores[s].plugin;
    CacheEntry* entries = cycle_entries_[s];
    const uint64_t gen = cycle_gen_[s];
    for (size_t i = 0; i < feasible_.size(); ++i) {
      const int n = feasible_[i];
      scores_[i] = entries ? Cached(entries[n], gen | state.version(n), plugin, cycle, state, n)
                           : plugin.Score(cycle, state, n);
    }
    RaiseTies(plugin.TieTolerance(), scores_);
    if (plugin.HasNormalize()) {
      plugin.NormalizeScore(scores_);
      for (const int64_t v : scores_) {
        SEEDANCE_CHECK(v >= kMinNodeScore && v <= kMaxNodeScore)
            << "score plugin '" << plugin.Name() << "' normalised a score to " << v << ", outside "
            << kMinNodeScore << ".." << kMaxNodeScore;
      }
    }
    const int64_t w = profile_.scores[s].weight;
    for (size_t i = 0; i < feasible_.size(); ++i) totals_[i] += w * scores_[i];
  }
  // Highest total, first in node order on ties.
  size_t best = 0;
  for (size_t i = 1; i < feasible_.size(); ++i) {
    if (totals_[i] > totals_[best] ||
        (totals_[i] == totals_[best] && rank_[feasible_[i]] < rank_[feasible_[best]])) {
      best = i;
    }
  }
  return feasible_[best];
}

bool Framework::NeedsNormalizing() const {
  bool normalize = false;
  for (const auto& s : profile_.scores) normalize = normalize || s.plugin->HasNormalize();
  if (!normalize || profile_.scores.size() != 1) return normalize;
  // One scorer whose normalisation keeps the top: the raw argmax is the normalised one.
  return profile_.scores[0].weight < 0 || !profile_.scores[0].plugin->NormalizeKeepsTop();
}

void Framework::SyncRanks(int num_nodes) {
  if (static_cast<int>(rank_.size()) == num_nodes) return;
  std::vector<int>& order = options_.node_order;
  const int have = static_cast<int>(order.size());
  if (have == static_cast<int>(rank_.size()) && have < num_nodes) {
    // The order in use (or none yet) covers the old nodes: the added ones go last.
    for (int n = have; n < num_nodes; ++n) order.push_back(n);
  } else if (have != num_nodes) {
    order.resize(num_nodes);
    std::iota(order.begin(), order.end(), 0);
  }
  rank_.assign(num_nodes, 0);
  for (int i = 0; i < num_nodes; ++i) rank_[order[i]] = i;
}

bool Framework::PassesFilterPlugins(const CycleState& cycle, const core::ClusterState& state, int n,
                                    std::string* rejected_by) const {
  for (const auto& f : profile_.filters) {
    if (!f->Filter(cycle, state, n)) {
      if (rejected_by != nullptr && rejected_by->empty()) *rejected_by = std::string(f->Name());
      return false;
    }
  }
  return true;
}

Diagnosis Framework::Explain(const core::PodShape& pod, const core::ClusterState& state) const {
  Diagnosis d = Diagnose(state, pod);
  if (profile_.filters.empty() || d.nodes_fit == 0) return d;
  CycleState cycle;
  cycle.pod = &pod;
  for (int n = 0; n < state.num_nodes(); ++n) {
    if (!state.Fits(n, pod) || PassesFilterPlugins(cycle, state, n, &d.plugin)) continue;
    --d.nodes_fit;
    ++d.counts[static_cast<size_t>(FilterReason::kPlugin)];
  }
  return d;
}

void Framework::RunPostFilters(CycleState& cycle, const core::ClusterState& state, Outcome* out) {
  const Diagnosis why = Explain(*cycle.pod, state);
  for (const auto& p : profile_.post_filters) {
    PostFilterResult r = p->PostFilter(cycle, state, why);
    if (r.nominated_node < 0) continue;
    SEEDANCE_CHECK(r.nominated_node < state.num_nodes() && state.alive(r.nominated_node))
        << "post-filter plugin '" << p->Name() << "' nominated node " << r.nominated_node
        << ", not a live node of " << state.num_nodes();
    out->nominated_node = r.nominated_node;
    out->victims = std::move(r.victims);
    return;
  }
}

bool Framework::RunPermits(CycleState& cycle, const core::ClusterState& state, bool reserved,
                           Outcome* out, double* wait_s) {
  *wait_s = 0;
  for (const auto& p : profile_.permits) {
    PermitResult r = p->Permit(cycle, state, out->placement);
    if (r.kind == PermitResult::kReject) {
      if (reserved) profile_.reserve->Unreserve(cycle, out->placement);
      out->code = Code::kUnschedulable;
      out->reason = absl::StrCat("permit plugin '", std::string(p->Name()), "': ", r.message);
      return false;
    }
    if (r.kind == PermitResult::kWait) {
      SEEDANCE_CHECK(r.timeout_s > 0)
          << "permit plugin '" << p->Name() << "' asked to wait " << r.timeout_s << " s";
      *wait_s = *wait_s > 0 ? std::min(*wait_s, r.timeout_s) : r.timeout_s;
    }
  }
  return true;
}

bool Framework::StartCycle(const core::PodShape& pod, core::ClusterState& state, CycleState* cycle,
                           Outcome* out) {
  SyncRanks(state.num_nodes());
  SyncCacheTo(state);
  cycle->pod = &pod;
  cycle->rng = &rng_;
  for (const auto& p : profile_.pre_filters) {
    if (absl::Status st = p->PreFilter(*cycle, state); !st.ok()) {
      out->code = Code::kUnschedulable;
      out->reason =
          absl::StrCat("pre-filter plugin '", std::string(p->Name()), "': ", st.message());
      return false;
    }
  }
  return true;
}

void Framework::FilterNodes(const CycleState& cycle, const core::ClusterState& state,
                            const std::vector<int>* candidates) {
  feasible_.clear();
  if (candidates == nullptr) {
    state.FeasibleNodes(*cycle.pod, &feasible_);
  } else {
    for (int n : *candidates) {
      if (n >= 0 && n < state.num_nodes() && state.Fits(n, *cycle.pod)) feasible_.push_back(n);
    }
  }
  if (profile_.filters.empty()) return;
  size_t kept = 0;
  for (int n : feasible_) {
    if (PassesFilterPlugins(cycle, state, n, nullptr)) feasible_[kept++] = n;
  }
  feasible_.resize(kept);
}

int Framework::SelectBest(CycleState& cycle, const core::ClusterState& state) {
  if (feasible_.empty()) return -1;
  cycle.feasible = feasible_;
  PrepareScorers(cycle, state, ShapeId(*cycle.pod));
  return NeedsNormalizing() ? SelectNormalized(cycle, state) : SelectUnnormalized(cycle, state);
}

void Framework::NoNode(CycleState& cycle, const core::ClusterState& state, Outcome* out) {
  const core::PodShape& pod = *cycle.pod;
  out->code = Code::kUnschedulable;
  out->reason = "no node has room";
  // Unresolvable if it would not fit even on an empty node.
  // Cordoned, tainted and removed nodes do not count (as kube-scheduler's NodeUnschedulable
  // and TaintToleration make them unresolvable).
  bool could_ever = false;
  for (int n = 0; n < state.num_nodes() && !could_ever; ++n) {
    const core::NodeSpec& spec = state.node(n);
    could_ever = state.schedulable(n) && state.Accessible(n, pod) &&
                 spec.cpu_milli >= pod.cpu_milli && spec.memory_mib >= pod.memory_mib &&
                 spec.num_gpus >= pod.num_gpu;
  }
  if (!could_ever) {
    out->code = Code::kUnschedulableAndUnresolvable;
    out->reason = "no node could hold this pod even when empty";
  }
  if (!profile_.post_filters.empty()) RunPostFilters(cycle, state, out);
}

Outcome Framework::Schedule(const core::PodShape& pod, core::ClusterState& state) {
  Outcome out;
  CycleState cycle;
  if (!StartCycle(pod, state, &cycle, &out)) return out;
  FilterNodes(cycle, state, nullptr);
  // PreScore, Score and select. Nodes are visited in index order (sequential memory); ties are
  // settled by rank_, the position in the configured node order, so the result equals a scan in
  // that order.
  const int best_node = SelectBest(cycle, state);
  if (best_node < 0) {
    NoNode(cycle, state, &out);
    return out;
  }
  Commit(cycle, state, best_node, &out);
  return out;
}

int Framework::Rank(const core::PodShape& pod, core::ClusterState& state,
                    const std::vector<int>& candidates,
                    std::vector<std::pair<int, int64_t>>* totals) {
  totals->clear();
  Outcome unused;
  CycleState cycle;
  if (!StartCycle(pod, state, &cycle, &unused)) return -1;
  FilterNodes(cycle, state, &candidates);
  const int best = SelectBest(cycle, state);
  if (best < 0) return -1;
  // The totals Schedule ranks by: normalised where it normalises, raw weighted sums otherwise.
  const bool normalize = NeedsNormalizing();
  std::vector<int64_t> sum(feasible_.size(), 0);
  for (size_t s = 0; s < profile_.scores.size(); ++s) {
    ScorePlugin& plugin = *profile_.scores[s].plugin;
    CacheEntry* entries = cycle_entries_[s];
    scores_.resize(feasible_.size());
    for (size_t i = 0; i < feasible_.size(); ++i) {
      const int n = feasible_[i];
      scores_[i] =
          entries ? Cached(entries[n], cycle_gen_[s] | state.version(n), plugin, cycle, state, n)
                  : plugin.Score(cycle, state, n);
    }
    RaiseTies(plugin.TieTolerance(), scores_);
    if (normalize && plugin.HasNormalize()) plugin.NormalizeScore(scores_);
    for (size_t i = 0; i < feasible_.size(); ++i) sum[i] += profile_.scores[s].weight * scores_[i];
  }
  for (size_t i = 0; i < feasible_.size(); ++i) totals->push_back({feasible_[i], sum[i]});
  return best;
}

Outcome Framework::PlaceOn(const core::PodShape& pod, core::ClusterState& state, int node) {
  Outcome out;
  CycleState cycle;
  if (!StartCycle(pod, state, &cycle, &out)) return out;
  const std::vector<int> only = {node};
  FilterNodes(cycle, state, &only);
  if (feasible_.empty()) {
    out.code = Code::kUnschedulable;
    out.reason = node >= 0 && node < state.num_nodes() && state.alive(node)
                     ? absl::StrCat("the pod does not fit on node ", state.node(node).name)
                     : "no such node";
    return out;
  }
  // The same PreScore as a full cycle, so that Reserve sees what it would have seen.
  cycle.feasible = feasible_;
  PrepareScorers(cycle, state, ShapeId(pod));
  Commit(cycle, state, node, &out);
  return out;
}

void Framework::Commit(CycleState& cycle, core::ClusterState& state, int best_node, Outcome* out) {
  const core::PodShape& pod = *cycle.pod;
  out->placement.node = best_node;

  // Reserve: choose GPUs.
  bool reserved = false;  // Unreserve pairs with a successful Reserve only
  if (pod.num_gpu > 0) {
    if (!profile_.reserve || !profile_.reserve->Reserve(cycle, state, &out->placement)) {
      out->code = Code::kError;
      out->reason = "reserve could not choose GPUs on the selected node";
      return;
    }
    reserved = true;
    // Bind only where Filter passed and Score chose.
    SEEDANCE_CHECK(out->placement.node == best_node)
        << "reserve plugin '" << profile_.reserve->Name() << "' moved the pod from node "
        << best_node << " (filtered and scored) to node " << out->placement.node;
    ChooseTopologyGpus(pod, state, best_node, &out->placement);
  } else {
    out->placement.num_gpus = 0;
  }
  // CPU and memory on the GPUs' NUMA node when they fit there (topology.h).
  out->placement.numa = ChooseNuma(state, pod, out->placement);

  // Permit.
  double wait_s = 0;
  if (!profile_.permits.empty() && !RunPermits(cycle, state, reserved, out, &wait_s)) return;

  // Bind.
  if (absl::Status st = state.Allocate(pod, out->placement); !st.ok()) {
    if (reserved) profile_.reserve->Unreserve(cycle, out->placement);
    out->code = Code::kError;
    out->reason = std::string(st.message());
    return;
  }
  for (auto& o : profile_.observers) o->OnBound(pod, out->placement, state);
  out->code = Code::kSuccess;
  if (wait_s > 0) {
    out->code = Code::kWait;
    out->wait_timeout_s = wait_s;
  }
}

void Framework::ChooseTopologyGpus(const core::PodShape& pod, const core::ClusterState& state,
                                   int node, core::Placement* placement) const {
  // Whole GPUs are interchangeable for every score, so which of the free ones a whole-GPU pod
  // gets is the interconnect's business: the topology chooser (topology.h) decides.
  if (!options_.topology_gpus || !HasGpuTopology(state.node(node))) return;
  // A sharing pod that Reserve put on a whole free GPU could have any whole free GPU (the same
  // multiset either way): the chooser keeps NVLink islands and switches whole.
  const bool whole = pod.gpu_milli >= core::kMilliGpu;
  const bool on_free_gpu =
      pod.num_gpu == 1 && placement->num_gpus == 1 &&
      state.gpu_left(node)[static_cast<size_t>(placement->gpus[0])] == core::kMilliGpu;
  if (whole || on_free_gpu) {
    (void)ChooseGpuSet(state, node, pod.num_gpu, placement);  // false: Reserve's choice stays
  }
}

void Framework::RejectWaiting(const core::PodShape& pod, const core::Placement& placement,
                              core::ClusterState& state) {
  if (pod.num_gpu > 0 && profile_.reserve) {
    CycleState cycle;
    cycle.pod = &pod;
    cycle.rng = &rng_;
    profile_.reserve->Unreserve(cycle, placement);
  }
  Release(pod, placement, state);
}

void Framework::Release(const core::PodShape& pod, const core::Placement& placement,
                        core::ClusterState& state) {
  absl::Status st = state.Release(pod, placement);
  // A release that does not match an allocation is a bug in the caller.
  SEEDANCE_CHECK(st.ok()) << "release of a pod that is not bound as given: " << st.message();
  for (auto& o : profile_.observers) o->OnReleased(pod, placement, state);
}

}  // namespace seedance::sched
