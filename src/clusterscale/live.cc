// The live cluster autoscaler's scan (see the header's contract).
#include "seedance/clusterscale/live.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "arrival_window.h"
#include "node_room.h"
#include "seedance/base/check.h"

namespace seedance::clusterscale {

absl::Status Validate(const LiveOptions& options) {
  if (absl::Status st = Validate(options.scale_up); !st.ok()) return st;
  auto time = [](std::string_view field, double v, bool positive) -> absl::Status {
    if (!std::isfinite(v) || v < 0 || (positive && v == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": ", v,
                                                     " must be finite and ",
                                                     positive ? "> 0" : ">= 0", " (seconds)"));
    }
    return absl::OkStatus();
  };
  if (absl::Status st = time("scale_down_unneeded_s", options.scale_down_unneeded_s, false);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = time("provision_timeout_s", options.provision_timeout_s, true); !st.ok()) {
    return st;
  }
  if (absl::Status st = time("backoff_s", options.backoff_s, false); !st.ok()) return st;
  if (!(options.scale_down_utilization_threshold >= 0 &&
        options.scale_down_utilization_threshold <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("scale_down_utilization_threshold: ", options.scale_down_utilization_threshold,
                     " is outside [0, 1]"));
  }
  if (options.max_drains_per_scan < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_drains_per_scan: ", options.max_drains_per_scan, " must be >= 1"));
  }
  if (absl::Status st = time("demand_horizon_s", options.demand_horizon_s, false); !st.ok()) {
    return st;
  }
  if (options.max_drain_candidates < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_drain_candidates: ", options.max_drain_candidates, " must be >= 1"));
  }
  return absl::OkStatus();
}

LiveAutoscaler::LiveAutoscaler(std::vector<NodeGroup> groups, LiveOptions options)
    : groups_(std::move(groups)),
      options_(options),
      backoff_until_(groups_.size(), -1),
      status_(groups_.size()) {
  SEEDANCE_CHECK(Validate(options_).ok())
      << "live autoscaler options refused: " << Validate(options_).message();
  for (const NodeGroup& g : groups_) {
    SEEDANCE_CHECK(g.min_size >= 0 && g.min_size <= g.max_size)
        << "group " << g.name << ": min_size " << g.min_size << " max_size " << g.max_size;
  }
}

LiveAutoscaler::~LiveAutoscaler() = default;

namespace {

// A node's GPU capacity in milli.
double Capacity(const LiveNode& n) {
  return static_cast<double>(n.gpu_free_milli.size()) * core::kMilliGpu;
}

}  // namespace

int IndexInGroup(std::string_view name, std::string_view group) {
  if (name.size() <= group.size() + 1 || !name.starts_with(group) || name[group.size()] != '-') {
    return -1;
  }
  const std::string_view digits = name.substr(group.size() + 1);
  int k = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
  return ec == std::errc() && end == digits.data() + digits.size() && k >= 0 ? k : -1;
}

void LiveAutoscaler::MatchRequested(const LiveView& view, LiveActions* out) {
  for (const LiveNode& n : view.nodes) requested_.erase(n.name);  // joined
  for (auto it = requested_.begin(); it != requested_.end();) {
    if (view.now_s - it->second.at_s >= options_.provision_timeout_s) {
      backoff_until_[it->second.group] = view.now_s + options_.backoff_s;
      out->timed_out.emplace_back(it->second.group, it->first);
      it = requested_.erase(it);
    } else {
      ++it;
    }
  }
}

void LiveAutoscaler::Shrink(const LiveView& view, std::vector<int>* size, double* ready_free_milli,
                            LiveActions* out) {
  const double threshold = options_.scale_down_utilization_threshold;
  std::map<std::string, double> still;
  std::vector<const LiveNode*> candidates;  // underused past the unneeded time: drain if they can
  for (const LiveNode& n : view.nodes) {
    if (n.group < 0 || !(n.empty || (threshold > 0 && n.utilization < threshold))) continue;
    auto it = unneeded_since_.find(n.name);
    const double since = it == unneeded_since_.end() ? view.now_s : it->second;
    const int g = n.group;
    if (view.now_s - since >= options_.scale_down_unneeded_s && (*size)[g] > groups_[g].min_size) {
      if (n.empty) {
        --(*size)[g];
        --status_[g].ready;
        out->remove.push_back(n.name);
        if (n.schedulable) *ready_free_milli -= Capacity(n);
        continue;
      }
      candidates.push_back(&n);
    }
    still[n.name] = since;
    ++status_[g].unneeded;
  }
  Drain(view, std::move(candidates), size, ready_free_milli, out);
  for (const auto& [name, pods] : out->drain) still.erase(name);
  unneeded_since_ = std::move(still);  // a node needed again starts over
}

namespace {

// The room in `rooms` (skipping those marked in `closed`) where `pod` leaves the least free GPU,
// then CPU; -1 if none fits. Rooms already planned on are read from `planned`.
int BestFit(const PendingPod& pod, const std::vector<NodeRoom>& rooms,
            const std::vector<bool>& closed, const std::map<size_t, NodeRoom>& planned) {
  int best = -1;
  std::pair<int64_t, int64_t> best_key;
  for (size_t i = 0; i < rooms.size(); ++i) {
    if (closed[i]) continue;
    auto p = planned.find(i);
    const NodeRoom& room = p == planned.end() ? rooms[i] : p->second;
    if (!room.Fits(pod)) continue;
    const std::pair<int64_t, int64_t> key{room.gpu_free_milli() - pod.shape.TotalGpuMilli(),
                                          room.cpu_free_milli() - pod.shape.cpu_milli};
    if (best < 0 || key < best_key) {
      best = static_cast<int>(i);
      best_key = key;
    }
  }
  return best;
}

}  // namespace

std::vector<PendingPod> LeftOver(const std::vector<PendingPod>& pods,
                                 const std::vector<LiveNode>& nodes) {
  std::vector<NodeRoom> rooms;
  for (const LiveNode& n : nodes) {
    if (n.schedulable) {
      rooms.emplace_back(n.gpu_model, n.cpu_free_milli, n.memory_free_mib, n.gpu_free_milli);
    }
  }
  std::vector<const PendingPod*> order;
  for (const PendingPod& p : pods) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const PendingPod* a, const PendingPod* b) {
    return a->shape.TotalGpuMilli() > b->shape.TotalGpuMilli();
  });
  std::vector<PendingPod> left;
  for (const PendingPod* p : order) {
    auto room =
        std::find_if(rooms.begin(), rooms.end(), [&](const NodeRoom& r) { return r.Fits(*p); });
    if (room == rooms.end()) {
      left.push_back(*p);
    } else {
      room->Take(p->shape);
    }
  }
  return left;
}

void LiveAutoscaler::Drain(const LiveView& view, std::vector<const LiveNode*> candidates,
                           std::vector<int>* size, double* ready_free_milli, LiveActions* out) {
  if (candidates.empty()) return;
  // Where pods may go: schedulable nodes not removed in this scan. A drained node takes no pod,
  // and a node that takes pods is not drained in the same scan.
  const std::set<std::string> leaving(out->remove.begin(), out->remove.end());
  std::vector<NodeRoom> rooms;
  std::map<const LiveNode*, size_t> index;
  std::vector<bool> closed;  // drained: takes no pod
  std::vector<bool> took;    // took pods: not drained
  for (const LiveNode& n : view.nodes) {
    if (!n.schedulable || leaving.contains(n.name)) continue;
    index[&n] = rooms.size();
    rooms.emplace_back(n.gpu_model, n.cpu_free_milli, n.memory_free_mib, n.gpu_free_milli);
    closed.push_back(false);
    took.push_back(false);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const LiveNode* a, const LiveNode* b) {
    return a->utilization < b->utilization;
  });
  int drained = 0, tried = 0;
  for (const LiveNode* c : candidates) {
    if (drained == options_.max_drains_per_scan || tried == options_.max_drain_candidates) break;
    const int g = c->group;
    auto self = index.find(c);
    if ((*size)[g] <= groups_[g].min_size || (self != index.end() && took[self->second])) {
      continue;
    }
    // The guard: the free GPU capacity left once the node is gone (its pods moved onto the
    // others) must still cover the demand expected before a new node could join.
    if (options_.drain_keeps_headroom &&
        *ready_free_milli - Capacity(*c) < out->expected_demand_milli) {
      continue;
    }
    ++tried;
    if (self != index.end()) closed[self->second] = true;
    std::vector<const PendingPod*> pods;
    for (const PendingPod& p : c->pods) pods.push_back(&p);
    std::stable_sort(pods.begin(), pods.end(), [](const PendingPod* a, const PendingPod* b) {
      return a->shape.TotalGpuMilli() > b->shape.TotalGpuMilli();
    });
    std::map<size_t, NodeRoom> planned;
    bool fits = true;
    for (const PendingPod* p : pods) {
      const int to = BestFit(*p, rooms, closed, planned);
      if (to < 0) {
        fits = false;
        break;
      }
      planned.try_emplace(to, rooms[to]).first->second.Take(p->shape);
    }
    if (!fits) {
      if (self != index.end()) closed[self->second] = false;
      continue;
    }
    for (auto& [i, room] : planned) {
      rooms[i] = std::move(room);
      took[i] = true;
    }
    --(*size)[g];
    --status_[g].ready;
    --status_[g].unneeded;
    out->drain.emplace_back(c->name, static_cast<int>(c->pods.size()));
    if (c->schedulable) *ready_free_milli -= Capacity(*c);
    ++drained;
  }
}

std::string LiveAutoscaler::NewName(int group, const LiveView& view) const {
  const std::string& name = groups_[group].name;
  std::vector<bool> used;
  auto mark = [&](std::string_view n) {
    const int k = IndexInGroup(n, name);
    if (k < 0 || k > groups_[group].max_size) return;  // past max: never the lowest free one
    if (static_cast<size_t>(k) >= used.size()) used.resize(k + 1, false);
    used[k] = true;
  };
  for (const LiveNode& n : view.nodes) mark(n.name);
  for (const auto& [r, req] : requested_) mark(r);
  const size_t k = std::find(used.begin(), used.end(), false) - used.begin();
  return absl::StrCat(name, "-", k);
}

void LiveAutoscaler::Grow(const LiveView& view, const std::vector<int>& size, LiveActions* out) {
  // Pods that fit on nodes still being provisioned wait for them (CA counts upcoming nodes).
  std::vector<NodeRoom> upcoming;
  for (const auto& [name, req] : requested_) upcoming.emplace_back(groups_[req.group].node);
  std::vector<PendingPod> rest;
  for (const PendingPod& p : view.unschedulable) {
    auto room = std::find_if(upcoming.begin(), upcoming.end(),
                             [&](const NodeRoom& r) { return r.Fits(p); });
    if (room == upcoming.end()) {
      rest.push_back(p);
    } else {
      room->Take(p.shape);
      ++out->pods_waiting_for_upcoming;
    }
  }
  if (rest.empty() && !options_.prescale) return;
  std::vector<int> room(groups_.size(), 0);
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (backoff_until_[g] > view.now_s) continue;
    room[g] = std::max(0, groups_[g].max_size - size[g]);
  }
  for (const PendingPod& p : rest) {
    bool fits = false, has_room = false;
    for (size_t g = 0; g < groups_.size() && !has_room; ++g) {
      if (!FitsEmptyNode(groups_[g].node, p)) continue;
      fits = true;
      has_room = room[g] > 0;
    }
    if (!fits) ++out->pods_no_group_fits;
    if (fits && !has_room) ++out->pods_groups_full;
  }
  ScaleUp up;
  up.add.assign(groups_.size(), 0);
  if (!rest.empty()) up = DecideScaleUp(groups_, rest, room, options_.scale_up);
  out->pods_helped = up.pods_helped;
  if (options_.prescale) Prescale(view, room, up, out);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (int i = 0; i < up.add[g]; ++i) {
      const std::string name = NewName(static_cast<int>(g), view);
      requested_[name] = {static_cast<int>(g), view.now_s};
      out->add.emplace_back(static_cast<int>(g), name);
    }
  }
}

// Pre-scaling: the unschedulable pods, then the arrivals expected before a node requested now
// could join (the latest ones, as much GPU as expected_demand_milli), fitted on the room of the
// schedulable nodes this scan keeps, the upcoming nodes and those just requested; nodes are
// requested for what does not fit (the simulator's rule).
void LiveAutoscaler::Prescale(const LiveView& view, const std::vector<int>& room, const ScaleUp& up,
                              LiveActions* out) {
  if (out->expected_demand_milli <= 0) return;
  std::set<std::string_view> going(out->remove.begin(), out->remove.end());
  for (const auto& [name, pods] : out->drain) going.insert(name);
  std::vector<NodeRoom> rooms;
  for (const LiveNode& n : view.nodes) {
    if (n.schedulable && !going.contains(n.name)) {
      rooms.emplace_back(n.gpu_model, n.cpu_free_milli, n.memory_free_mib, n.gpu_free_milli);
    }
  }
  for (const auto& [name, req] : requested_) rooms.emplace_back(groups_[req.group].node);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (int i = 0; i < up.add[g]; ++i) rooms.emplace_back(groups_[g].node);
  }
  std::vector<const NodeRoom*> at;
  for (const NodeRoom& r : rooms) at.push_back(&r);
  std::vector<PendingPod> pods = view.unschedulable;
  const std::vector<PendingPod> expected = arrivals_->Latest(out->expected_demand_milli);
  pods.insert(pods.end(), expected.begin(), expected.end());
  const std::vector<PendingPod> shortfall = NotFitting(pods, at);
  if (shortfall.empty()) return;
  std::vector<int> left(room.size());
  for (size_t g = 0; g < room.size(); ++g) left[g] = std::max(0, room[g] - up.add[g]);
  const ScaleUp pre = DecideScaleUp(groups_, shortfall, left, options_.scale_up);
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (int i = 0; i < pre.add[g]; ++i) {
      const std::string name = NewName(static_cast<int>(g), view);
      requested_[name] = {static_cast<int>(g), view.now_s};
      out->add.emplace_back(static_cast<int>(g), name);
      ++out->prescaled;
    }
  }
}

void LiveAutoscaler::Failed(const std::string& name, double now_s) {
  auto it = requested_.find(name);
  if (it == requested_.end()) return;
  backoff_until_[it->second.group] = now_s + options_.backoff_s;
  requested_.erase(it);
}

LiveActions LiveAutoscaler::Scan(const LiveView& view) {
  LiveActions out;
  for (LiveGroupStatus& s : status_) s = {};
  MatchRequested(view, &out);
  std::vector<int> size(groups_.size(), 0);
  for (const LiveNode& n : view.nodes) {
    SEEDANCE_CHECK(n.group >= -1 && n.group < static_cast<int>(groups_.size()))
        << "node " << n.name << " in group " << n.group << " of " << groups_.size();
    if (n.group < 0) continue;
    ++size[n.group];
    ++status_[n.group].ready;
  }
  for (const auto& [name, req] : requested_) ++size[req.group];
  if (!arrivals_) arrivals_ = std::make_unique<internal::ArrivalWindow>(view.now_s, 3600);
  for (const PendingPod& p : view.arrivals) arrivals_->Add(view.now_s, p);
  arrivals_->Expire(view.now_s);
  out.expected_demand_milli = arrivals_->ExpectedMilli(view.now_s, options_.demand_horizon_s);
  double ready_free_milli = 0;
  for (const LiveNode& n : view.nodes) {
    if (!n.schedulable) continue;
    for (int32_t f : n.gpu_free_milli) ready_free_milli += f;
  }
  Shrink(view, &size, &ready_free_milli, &out);
  Grow(view, size, &out);
  for (const auto& [name, req] : requested_) ++status_[req.group].provisioning;
  for (size_t g = 0; g < groups_.size(); ++g) {
    status_[g].backed_off = backoff_until_[g] > view.now_s;
  }
  return out;
}

}  // namespace seedance::clusterscale
