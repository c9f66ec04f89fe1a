// Clock offset and frequency estimation from NTP samples, and a simulator to measure it.
//
// An estimator consumes ClockSamples (sntp.h) in time order and predicts, at any local time t, the
// offset of the local clock from the server (server - local, seconds) and the local clock's
// frequency error (seconds gained per second by the server relative to the local clock, so a local
// clock that runs 10 ppm fast has freq_ppm = -10). See docs/clock.md for the design.
//
// Two estimators:
//  * RegressionEstimator (Seedance's): weighted least squares of offset against local time over a
//    window of the last `window` samples. Each sample's weight falls with its excess delay over
//    the window's minimum delay (a sample that queued longer has a larger possible asymmetry);
//    samples whose excess delay is far above the window's typical excess are rejected as outliers,
//    then samples whose residual from the first fit is far above the weighted residual spread are
//    rejected and the line refitted. The prediction extrapolates the line, so a drifting clock is
//    tracked without lag.
//  * EwmaEstimator (the seed's baseline, seed A section 3.3): the weighted mean of the last 8
//    offsets, weight decay^age with decay 0.85. It assumes a constant offset, so on a drifting
//    clock it lags by drift * (weighted mean age of the window), and it has no outlier rejection.
//
// Thread-safety: estimators and the simulator are single-threaded values.
#ifndef SEEDANCE_ENGINE_CLOCK_SYNC_H_
#define SEEDANCE_ENGINE_CLOCK_SYNC_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "seedance/engine/sntp.h"

namespace seedance::engine {

class ClockEstimator {
 public:
  virtual ~ClockEstimator() = default;
  virtual std::string Name() const = 0;
  // Adds a sample. REQUIRES: local_time_s not decreasing across calls.
  virtual void AddSample(const ClockSample& sample) = 0;
  // Predicted offset (server - local) in seconds at local time t; 0 before any sample.
  virtual double OffsetAt(double local_time_s) const = 0;
  // Estimated frequency error in ppm (d offset / d local time * 1e6); 0 until estimable.
  virtual double FrequencyPpm() const = 0;
  // Samples used in the latest estimate (after outlier rejection).
  virtual int SamplesUsed() const = 0;
};

struct RegressionOptions {
  int window = 64;                       // samples kept
  double delay_floor_s = 20e-6;          // weight = 1 / (floor^2 + excess_delay^2)
  double outlier_delay_factor = 4.0;     // reject excess delay > factor * median excess + floor
  double outlier_residual_factor = 4.0;  // reject |residual| > factor * weighted MAD + floor/2
  int min_samples_for_frequency = 4;     // fewer kept samples: offset only, slope 0
};

struct EwmaOptions {
  int window = 8;
  double decay = 0.85;
};

std::unique_ptr<ClockEstimator> NewRegressionEstimator(const RegressionOptions& options = {});
std::unique_ptr<ClockEstimator> NewEwmaEstimator(const EwmaOptions& options = {});

// A client clock that drifts and a network path with queueing jitter and delay outliers. Time
// runs on a perfect reference ("true" time, seconds) that the server reads exactly; the client
// clock reads true + x(true) with x(t) = initial_offset + drift * t, so the true offset
// (server - client) at true time t is -x(t). One-way delays are base/2 plus an exponential
// queueing delay of mean jitter (independently per direction); with probability outlier_fraction
// one direction (chosen at random) also waits an extra uniform [outlier_min, outlier_max].
struct ClockSimOptions {
  double drift_ppm = 10;           // client runs this many ppm fast
  double initial_offset_s = 2e-3;  // client ahead of the server at t = 0
  double poll_interval_s = 1;
  double base_delay_s = 200e-6;  // symmetric round trip without queueing
  double jitter_s = 50e-6;       // mean of the exponential queueing delay, per direction
  double outlier_fraction = 0.10;
  double outlier_min_s = 1e-3;
  double outlier_max_s = 20e-3;
  double server_hold_s = 20e-6;  // t3 - t2
  uint64_t seed = 1;
};

// A sample as the client sees it, with the simulator's truth beside it.
struct SimulatedSample {
  ClockSample sample;        // what the client measured (local_time_s = t4 on its clock)
  double true_time_s = 0;    // true time at t4
  double true_offset_s = 0;  // server - client at t4 (what an estimator should say)
  double true_freq_ppm = 0;  // -drift_ppm
};

class ClockSimulator {
 public:
  explicit ClockSimulator(const ClockSimOptions& options);
  // The next poll's sample; polls are poll_interval_s apart in true time.
  SimulatedSample Next();

 private:
  double LocalAt(double true_time_s) const;
  ClockSimOptions options_;
  std::mt19937_64 rng_;
  double next_true_time_s_;
};

// Errors of one estimator over one simulated run: the error at sample k is OffsetAt(t4_k) after
// sample k was added minus the true offset at t4_k; samples before `warmup` are not scored.
struct EstimatorScore {
  std::string estimator;
  double bias_us = 0;           // mean error
  double rms_us = 0;            // sqrt(mean error^2)
  double p99_abs_error_us = 0;  // 99th percentile of |error|
  double freq_error_ppm = 0;    // |FrequencyPpm() - true| after the last sample
};

// Runs `samples` polls of a fresh simulator through each estimator (same samples for all).
std::vector<EstimatorScore> ScoreEstimators(const ClockSimOptions& sim, int samples, int warmup,
                                            const std::vector<ClockEstimator*>& estimators);

}  // namespace seedance::engine

#endif  // SEEDANCE_ENGINE_CLOCK_SYNC_H_
