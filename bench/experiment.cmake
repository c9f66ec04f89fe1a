# seedance_experiment: the statistics' calibration by simulation (issue 41; docs/experiments.md,
# "Statistics"): false-positive rate of the sequential test and of the peeking t-test over A/A
# experiments, power and stopping time over A/B experiments at the MDE, CUPED's variance
# reduction against rho^2, the SRM check. Release only:
#   build/bench/experiment_calibration --experiments 2000 --looks 100 --seed 1 --threads 2
if(TARGET seedance_experiment)
  add_executable(experiment_calibration experiment_calibration.cc)
  target_link_libraries(experiment_calibration PRIVATE seedance_experiment seedance_base
                                                       CLI11::CLI11 nlohmann_json::nlohmann_json)
endif()
