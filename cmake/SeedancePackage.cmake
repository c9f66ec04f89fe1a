# The release's Debian packages, made by CPack from the install components (cmake/
# SeedanceInstall.cmake): `seedance` (runtime) and `libseedance-dev` (dev). tools/release.sh runs
# it with SOURCE_DATE_EPOCH set to the commit's time, which CPack uses for every timestamp in the
# archives, so two builds of one commit give the same bytes (docs/install.md, "Verifying").
set(SEEDANCE_MAINTAINER "Seedance maintainers <maintainers@users.noreply.a-seed-6decb09e.example>")

# The Debian changelog and copyright files every package carries (Debian policy 12.5, 12.7).
# string(TIMESTAMP) honours SOURCE_DATE_EPOCH from the environment: make it the commit's (a tree
# with neither git nor SOURCE_DATE_EPOCH has epoch 0, and gets today's date).
set(saved "$ENV{SOURCE_DATE_EPOCH}")
if(SEEDANCE_SOURCE_DATE_EPOCH)
  set(ENV{SOURCE_DATE_EPOCH} ${SEEDANCE_SOURCE_DATE_EPOCH})
endif()
string(TIMESTAMP SEEDANCE_RELEASE_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(ENV{SOURCE_DATE_EPOCH} "${saved}")
foreach(pkg seedance libseedance-dev)
  set(doc ${PROJECT_BINARY_DIR}/debian-doc/${pkg})
  file(MAKE_DIRECTORY ${doc})
  file(WRITE ${doc}/changelog
"${pkg} (${PROJECT_VERSION}) unstable; urgency=medium

  * Release ${PROJECT_VERSION} (commit ${SEEDANCE_GIT_COMMIT}); what changed is in the
    repository's history and docs/install.md.

 -- ${SEEDANCE_MAINTAINER}  ${SEEDANCE_RELEASE_DATE}
")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/copyright ${doc}/copyright COPYONLY)
  set(component runtime)
  if(pkg STREQUAL "libseedance-dev")
    set(component dev)
  endif()
  install(CODE "execute_process(COMMAND gzip -9nc \"${doc}/changelog\"
                  OUTPUT_FILE \"${doc}/changelog.gz\" COMMAND_ERROR_IS_FATAL ANY)"
          COMPONENT ${component})
  install(FILES ${doc}/changelog.gz ${doc}/copyright
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg} COMPONENT ${component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME seedance)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${SEEDANCE_MAINTAINER}")
set(CPACK_PACKAGE_VENDOR "Seedance")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it above each package's own synopsis.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME seedance)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION admin)
# The shared libraries the binaries really link become dependencies through dpkg-shlibdeps.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# init-system-helpers (deb-systemd-helper, in the maintainer scripts) is Essential in bookworm.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "openmpi-bin")
# The first line is the synopsis; CPack indents the rest and turns an empty line into " .".
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
"cost-aware GPU cluster scheduler and resource orchestrator
Seedance places AI training and inference work on GPU clusters: fractional
GPU sharing, fragmentation- and NUMA-aware placement, tenants and quotas,
autoscaling, cost analysis, an inference runtime simulator, ONNX model
numerics and compressed-gradient training.

This package holds the seedance command, the seedanced server with its
systemd unit, and seedance-train (the Open MPI side of seedance train).")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/cmake/debian/postinst ${PROJECT_SOURCE_DIR}/cmake/debian/prerm
  ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libseedance-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_ARCHITECTURE amd64)
# What cmake/SeedanceConfig.cmake.in finds, as Debian packages.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
  "seedance (= ${PROJECT_VERSION}), libabsl-dev, nlohmann-json3-dev, libyaml-cpp-dev, libprotobuf-dev, libonnx-dev, libdnnl-dev, prometheus-cpp-dev, libssl-dev, libboost-dev, libsqlite3-dev, libopenmpi-dev, libcpp-httplib-dev, libhwloc-dev, libgrpc++-dev, libevent-dev, libzstd-dev, liblzma-dev, zlib1g-dev, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION
"Seedance C++ libraries (static), headers, CMake and pkg-config files
For programs built on Seedance's scheduler, simulator and model libraries:
find_package(Seedance CONFIG) gives Seedance::core, Seedance::sched and the
rest; pkg-config gives the seedance-<library> modules.")

include(CPack)
