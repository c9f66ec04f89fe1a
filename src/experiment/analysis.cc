// Experiment: the running analysis behind a report (experiment.h).
#include <algorithm>
#include <cmath>
#include <utility>

#include "seedance/base/check.h"
#include "seedance/experiment/experiment.h"

namespace seedance::experiment {

namespace {

using Json = nlohmann::json;

// A number for the report: JSON has no infinity or NaN; such values read null.
Json Num(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

Json TestJson(const TestResult& t) {
  return {{"significant", t.significant},
          {"p_value", Num(t.p_value)},
          {"ci", Json::array({Num(t.ci_lo), Num(t.ci_hi)})}};
}

}  // namespace

Experiment::Experiment(std::string name, ExperimentSpec spec)
    : name_(std::move(name)), spec_(std::move(spec)) {
  const size_t v = spec_.variants.size();
  SEEDANCE_CHECK(v >= 2 && spec_.control_index() >= 0)
      << "experiment " << name_ << ": needs two variants and a control among them";
  metrics_.resize(spec_.metrics.size());
  for (MetricState& m : metrics_) {
    m.arms.resize(v);
    m.sequential.resize(v);
  }
  sessions_.resize(v);
  stopped_.resize(v);
}

int64_t Experiment::sessions() const {
  int64_t n = 0;
  for (const auto& s : sessions_) n += static_cast<int64_t>(s.size());
  return n;
}

void Experiment::Apply(const std::vector<Event>& events) {
  for (const Event& e : events) {
    SEEDANCE_CHECK(e.variant >= 0 && e.variant < static_cast<int>(spec_.variants.size()))
        << "event variant " << e.variant << " out of range";
    ++events_;
    const uint64_t h = AssignmentHash(name_, e.session);
    sessions_[e.variant].insert(h);
    if (AssignVariant(spec_, name_, e.session) != e.variant) ++mismatched_;
    if (!e.stop_reason.empty() && stopped_[e.variant].empty()) stopped_[e.variant] = e.stop_reason;
    for (const MetricValue& mv : e.metrics) {
      Arm& arm = metrics_[mv.metric].arms[e.variant];
      arm.raw.Add(mv.value);
      for (const MetricValue& cv : e.covariates) {
        if (cv.metric == mv.metric) arm.joint.Add(mv.value, cv.value);
      }
    }
  }
  Look();
}

// Fixes the metric's mixture variance and planned samples from the data so far: the pooled
// variance of the arms and the control's mean (the MDE is relative to it).
void Experiment::Plan(MetricState& m) const {
  double ss = 0;
  int64_t dof = 0;
  for (const Arm& a : m.arms) {
    if (a.raw.n < 2) continue;
    ss += a.raw.m2;
    dof += a.raw.n - 1;
  }
  const double sigma2 = dof > 0 ? ss / static_cast<double>(dof) : 0;
  const Moments& control = m.arms[spec_.control_index()].raw;
  double mde_abs = spec_.mde * std::fabs(control.mean);
  // A metric whose control mean is 0 has no relative scale: the MDE is in standard deviations.
  if (!(mde_abs > 0)) mde_abs = spec_.mde * std::sqrt(sigma2);
  if (!(sigma2 > 0) || !(mde_abs > 0)) return;  // nothing varies yet: plan at a later look
  m.sequential_n = SequentialSampleSize(sigma2, mde_abs, spec_.alpha, spec_.power);
  m.fixed_n = FixedHorizonSampleSize(sigma2, mde_abs, spec_.alpha, spec_.power);
  m.tau2 = MsprtTau2(mde_abs, sigma2, m.sequential_n, spec_.alpha);
  m.planned = m.tau2 > 0;
}

void Experiment::Look() {
  const int c = spec_.control_index();
  for (MetricState& m : metrics_) {
    if (!m.planned) {
      const bool control_ready = m.arms[c].raw.n >= kBurnIn;
      bool other_ready = false;
      for (size_t v = 0; v < m.arms.size(); ++v) {
        if (static_cast<int>(v) != c && m.arms[v].raw.n >= kBurnIn) other_ready = true;
      }
      if (control_ready && other_ready) Plan(m);
      if (!m.planned) continue;
    }
    for (size_t v = 0; v < m.arms.size(); ++v) {
      if (static_cast<int>(v) == c) continue;
      const Compared cmp = Compare(m, static_cast<int>(v));
      m.sequential[v].Update(MsprtTest(cmp.control, cmp.treatment, spec_.alpha, m.tau2),
                             spec_.alpha);
    }
  }
}

Experiment::Compared Experiment::Compare(const MetricState& m, int v) const {
  const Arm& control = m.arms[spec_.control_index()];
  const Arm& arm = m.arms[v];
  Compared out{control.raw, arm.raw, false, {}};
  // CUPED when every event of both arms carried this metric's pre-period covariate.
  if (control.raw.n >= 2 && arm.raw.n >= 2 && control.joint.n == control.raw.n &&
      arm.joint.n == arm.raw.n) {
    out.cuped = Cuped(control.joint, arm.joint);
    out.control = out.cuped.control;
    out.treatment = out.cuped.treatment;
    out.adjusted = true;
  }
  return out;
}

Json Experiment::ArmReport(const MetricState& m, int metric, int v) const {
  const Compared cmp = Compare(m, v);
  const Moments& cm = cmp.control;
  const Moments& tm = cmp.treatment;
  Json cuped_json = nullptr;
  if (cmp.adjusted) {
    cuped_json = {{"theta", Num(cmp.cuped.theta)},
                  {"variance_reduction", Num(cmp.cuped.variance_reduction)}};
  }
  const TestResult fixed = WelchTest(cm, tm, spec_.alpha);
  const SequentialState& seq = m.sequential[v];
  const double delta = tm.mean - cm.mean;
  std::string decision = "inconclusive";
  if (seq.significant) {
    const bool up = delta > 0;
    const bool good = spec_.metrics[metric].direction == Direction::kIncrease ? up : !up;
    decision = good ? "better" : "worse";
  }
  Json fixed_json = TestJson(fixed);
  fixed_json["readable"] = m.planned && cm.n >= m.fixed_n && tm.n >= m.fixed_n;
  Json seq_json = {{"significant", seq.significant},
                   {"p_value", Num(seq.p_value)},
                   {"ci", Json::array({Num(seq.ci_lo), Num(seq.ci_hi)})},
                   {"readable", m.planned}};
  return {{"n", tm.n},
          {"mean", Num(tm.mean)},
          {"delta", Num(delta)},
          {"relative_delta", cm.mean != 0 ? Num(delta / std::fabs(cm.mean)) : Json(nullptr)},
          {"sequential", seq_json},
          {"fixed_horizon", fixed_json},
          {"cuped", cuped_json},
          {"decision", decision},
          {"decided_by", seq.significant ? Json("sequential") : Json(nullptr)}};
}

Json Experiment::Report() const {
  const int c = spec_.control_index();
  std::vector<int64_t> counts;
  std::vector<double> weights;
  Json per_variant = Json::object(), stopped = Json::object();
  for (size_t v = 0; v < spec_.variants.size(); ++v) {
    counts.push_back(static_cast<int64_t>(sessions_[v].size()));
    weights.push_back(spec_.variants[v].weight);
    per_variant[spec_.variants[v].name] = counts.back();
    if (!stopped_[v].empty()) stopped[spec_.variants[v].name] = stopped_[v];
  }
  const bool any = sessions() > 0;
  const SrmResult srm = any ? SampleRatioTest(counts, weights) : SrmResult{};
  Json metrics = Json::object();
  for (size_t i = 0; i < metrics_.size(); ++i) {
    const MetricState& m = metrics_[i];
    Json variants = Json::object();
    for (size_t v = 0; v < spec_.variants.size(); ++v) {
      if (static_cast<int>(v) == c) continue;
      variants[spec_.variants[v].name] = ArmReport(m, static_cast<int>(i), static_cast<int>(v));
    }
    metrics[spec_.metrics[i].name] = {
        {"direction", DirectionName(spec_.metrics[i].direction)},
        {"control", {{"n", m.arms[c].raw.n}, {"mean", Num(m.arms[c].raw.mean)}}},
        {"planned_n",
         {{"fixed_horizon", m.planned ? Json(m.fixed_n) : Json(nullptr)},
          {"sequential", m.planned ? Json(m.sequential_n) : Json(nullptr)}}},
        {"variants", variants}};
  }
  Json void_reason = nullptr;
  if (srm.mismatch) {
    void_reason =
        "sample ratio mismatch: the sessions per variant do not match the weights "
        "(p < 0.001); the assignment or the logging is broken and no result holds";
  }
  return {
      {"control", spec_.control},
      {"events", events_},
      {"sessions", per_variant},
      {"assignment_mismatches", mismatched_},
      {"srm", {{"chi2", Num(srm.chi2)}, {"p_value", Num(srm.p_value)}, {"mismatch", srm.mismatch}}},
      {"valid", !srm.mismatch},
      {"void_reason", void_reason},
      {"stopped_variants", stopped},
      {"metrics", metrics}};
}

}  // namespace seedance::experiment
