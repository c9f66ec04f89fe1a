# What `cmake --install` puts where (docs/install.md), in two components that become the two
# Debian packages of a release (cmake/SeedancePackage.cmake):
#   runtime  seedance, seedanced, seedance-train; man pages and shell completion generated from
#            the command tree; the systemd unit and its defaults; examples and deploy files.
#   dev      the static libraries with a CMake package (find_package(Seedance CONFIG), targets
#            Seedance::<name>), a pkg-config file per library (seedance-<name>.pc), the headers.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every product library: static, so the set is closed under what they link.
set(SEEDANCE_LIBRARIES
  base hw core trace sched sim store policy api slurm server ha engine telemetry k8s cost
  serving model model_cost train cache autoscale nodeagent deviceplugin deviceplugin_api elastic
  clusterscale daemon experiment federation)

# A commit's own time (or SOURCE_DATE_EPOCH when the caller sets it): the date in the manual
# pages, so that two builds of one commit write the same bytes (reproducible-builds.org).
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  set(SEEDANCE_SOURCE_DATE_EPOCH $ENV{SOURCE_DATE_EPOCH})
else()
  execute_process(COMMAND git log -1 --format=%ct WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE SEEDANCE_SOURCE_DATE_EPOCH OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET)
  if(NOT SEEDANCE_SOURCE_DATE_EPOCH)
    set(SEEDANCE_SOURCE_DATE_EPOCH 0)
  endif()
endif()

# --- runtime -------------------------------------------------------------------------------
install(TARGETS seedance seedance-train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT runtime)
install(CODE "execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink seedance
  \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/seedanced\")"
        COMPONENT runtime)

# Manual pages and completion scripts, written by the program itself from its command tree
# (`seedance manpages`, `seedance completion`), so they say what --help says.
set(SEEDANCE_GEN ${PROJECT_BINARY_DIR}/generated)
add_custom_command(
  OUTPUT ${SEEDANCE_GEN}/man.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${SEEDANCE_GEN}/man
  COMMAND ${CMAKE_COMMAND} -E env SOURCE_DATE_EPOCH=${SEEDANCE_SOURCE_DATE_EPOCH}
          $<TARGET_FILE:seedance> manpages ${SEEDANCE_GEN}/man
  COMMAND sh -c "gzip -9nf '${SEEDANCE_GEN}'/man/*.1 '${SEEDANCE_GEN}'/man/*.8"
  COMMAND sh -c "'$<TARGET_FILE:seedance>' completion bash > '${SEEDANCE_GEN}/seedance.bash'"
  COMMAND sh -c "'$<TARGET_FILE:seedance>' completion zsh > '${SEEDANCE_GEN}/_seedance'"
  COMMAND ${CMAKE_COMMAND} -E touch ${SEEDANCE_GEN}/man.stamp
  DEPENDS seedance
  COMMENT "manual pages and shell completion from the command tree"
  VERBATIM)
add_custom_target(seedance_docs ALL DEPENDS ${SEEDANCE_GEN}/man.stamp)
install(DIRECTORY ${SEEDANCE_GEN}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT runtime FILES_MATCHING PATTERN "*.1.gz")
install(DIRECTORY ${SEEDANCE_GEN}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man8
        COMPONENT runtime FILES_MATCHING PATTERN "*.8.gz")
install(FILES ${SEEDANCE_GEN}/seedance.bash RENAME seedance
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT runtime)
install(FILES ${SEEDANCE_GEN}/_seedance DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions
        COMPONENT runtime)

# The service. systemd looks in /lib/systemd/system for a package's units on Debian bookworm;
# other prefixes keep it under the prefix (lib/systemd/system).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(SEEDANCE_UNIT_DIR /lib/systemd/system)
else()
  set(SEEDANCE_UNIT_DIR lib/systemd/system)
endif()
install(FILES deploy/systemd/seedanced.service DESTINATION ${SEEDANCE_UNIT_DIR} COMPONENT runtime)
set(SEEDANCE_DOC_DIR ${CMAKE_INSTALL_DATADIR}/doc/seedance)
install(DIRECTORY examples/ DESTINATION ${SEEDANCE_DOC_DIR}/examples COMPONENT runtime)
# The documentation the manual pages and --help point to (docs/api.md, docs/install.md, ...).
install(FILES README.md BENCHMARKS.md DESTINATION ${SEEDANCE_DOC_DIR} COMPONENT runtime)
install(DIRECTORY docs/ DESTINATION ${SEEDANCE_DOC_DIR}/docs COMPONENT runtime
        FILES_MATCHING PATTERN "*.md" PATTERN "*.yaml")
install(DIRECTORY deploy/ DESTINATION ${SEEDANCE_DOC_DIR}/deploy COMPONENT runtime
        PATTERN "*.sh" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                   WORLD_READ WORLD_EXECUTE)

# --- dev -----------------------------------------------------------------------------------
foreach(name IN LISTS SEEDANCE_LIBRARIES)
  set_target_properties(seedance_${name} PROPERTIES EXPORT_NAME ${name})
  list(APPEND SEEDANCE_LIBRARY_TARGETS seedance_${name})
endforeach()
install(TARGETS ${SEEDANCE_LIBRARY_TARGETS} EXPORT SeedanceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/seedance DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
set(SEEDANCE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Seedance)
install(EXPORT SeedanceTargets NAMESPACE Seedance:: DESTINATION ${SEEDANCE_CMAKE_DIR}
        COMPONENT dev)
configure_package_config_file(cmake/SeedanceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SeedanceConfig.cmake INSTALL_DESTINATION ${SEEDANCE_CMAKE_DIR})
# 0.x: a minor release may change the libraries' API, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SeedanceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SeedanceConfig.cmake
              ${PROJECT_BINARY_DIR}/SeedanceConfigVersion.cmake
        DESTINATION ${SEEDANCE_CMAKE_DIR} COMPONENT dev)
include(${CMAKE_CURRENT_LIST_DIR}/SeedancePkgConfig.cmake)
