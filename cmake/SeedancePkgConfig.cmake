# A pkg-config file per library (seedance-<name>.pc), written from what the library links, so
# that `pkg-config --cflags --libs seedance-sched` gives a non-CMake build everything it needs.
# The libraries are static: whatever they link, privately or not, is in Requires or Libs. The
# prefix is found from the file's own place (${pcfiledir}), so `cmake --install --prefix` anywhere
# gives working files. A dependency this table does not know stops the configure step.

# CMake target -> pkg-config module ("pc:NAME") or linker flags ("libs:FLAGS"); "" for header-only.
set(SEEDANCE_PC_MAP
  "nlohmann_json::nlohmann_json=pc:nlohmann_json" "yaml-cpp=pc:yaml-cpp"
  "Threads::Threads=libs:-pthread" "PkgConfig::HTTPLIB=pc:cpp-httplib" "PkgConfig::HWLOC=pc:hwloc"
  "PkgConfig::GRPCPP=pc:grpc++" "PkgConfig::PROTOBUF=pc:protobuf" "PkgConfig::LIBEVENT=pc:libevent"
  "protobuf::libprotobuf=pc:protobuf" "onnx=libs:-lonnx" "onnx_proto=libs:-lonnx_proto"
  "SQLite::SQLite3=pc:sqlite3" "OpenSSL::SSL=pc:libssl" "OpenSSL::Crypto=pc:libcrypto"
  "Boost::headers=" "prometheus-cpp::core=pc:prometheus-cpp-core" "MPI::MPI_CXX=pc:ompi-cxx"
  "CLI11::CLI11=" "dl=libs:-ldl" "atomic=libs:-latomic" "PkgConfig::ZSTD=pc:libzstd"
  "PkgConfig::LZMA=pc:liblzma" "ZLIB::ZLIB=pc:zlib" "BZip2::BZip2=libs:-lbz2")

function(seedance_pc_item item requires_var libs_var)
  set(requires ${${requires_var}})
  set(libs ${${libs_var}})
  if(item MATCHES "^seedance_(.+)$" AND CMAKE_MATCH_1 IN_LIST SEEDANCE_LIBRARIES)
    list(APPEND requires "seedance-${CMAKE_MATCH_1}")
  elseif(item MATCHES "^absl::(.+)$")
    list(APPEND requires "absl_${CMAKE_MATCH_1}")
  elseif(IS_ABSOLUTE "${item}" AND item MATCHES "/lib([^/]+)\\.(so|a)$")
    list(APPEND libs "-l${CMAKE_MATCH_1}")  # a find_library result, e.g. libdnnl.so
  else()
    set(found FALSE)
    foreach(entry IN LISTS SEEDANCE_PC_MAP)
      string(FIND "${entry}" "=" eq)
      string(SUBSTRING "${entry}" 0 ${eq} key)
      if(key STREQUAL item)
        math(EXPR start "${eq} + 1")
        string(SUBSTRING "${entry}" ${start} -1 value)
        if(value MATCHES "^pc:(.+)$")
          list(APPEND requires "${CMAKE_MATCH_1}")
        elseif(value MATCHES "^libs:(.+)$")
          list(APPEND libs "${CMAKE_MATCH_1}")
        endif()
        set(found TRUE)
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "cmake/SeedancePkgConfig.cmake: no pkg-config mapping for '${item}'")
    endif()
  endif()
  set(${requires_var} ${requires} PARENT_SCOPE)
  set(${libs_var} ${libs} PARENT_SCOPE)
endfunction()

# pkgconfig/ sits in the libdir: count its components to walk back to the prefix.
string(REGEX MATCHALL "[^/]+" libdir_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
set(pc_prefix "\${pcfiledir}")
foreach(part IN LISTS libdir_parts)
  string(APPEND pc_prefix "/..")
endforeach()

foreach(name IN LISTS SEEDANCE_LIBRARIES)
  get_target_property(links seedance_${name} LINK_LIBRARIES)
  set(requires "")
  set(libs "")
  foreach(item IN LISTS links)
    if(item)
      seedance_pc_item("${item}" requires libs)
    endif()
  endforeach()
  list(REMOVE_DUPLICATES requires)
  list(REMOVE_DUPLICATES libs)
  string(JOIN ", " requires_text ${requires})
  string(JOIN " " libs_text ${libs})
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/pkgconfig/seedance-${name}.pc CONTENT
"prefix=${pc_prefix}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: seedance-${name}
Description: Seedance library ${name} (static; docs/architecture.md)
Version: ${PROJECT_VERSION}
Requires: ${requires_text}
Cflags: -I\${includedir}
Libs: -L\${libdir} -lseedance_${name} ${libs_text}
")
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/seedance-${name}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()
