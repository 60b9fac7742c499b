# The installable library: liblaya.so beside liblaya.a, `cmake --install` rules, laya.pc and the
# CMake package (find_package(laya) -> laya::laya). Included at the end of the top-level
# CMakeLists.txt, once every target it installs exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# liblaya.so: the static library's objects (already -fPIC: CMAKE_POSITION_INDEPENDENT_CODE) linked
# whole, so the engine is compiled once. Only the public API (laya_*) is exported.
add_library(laya_shared SHARED ${CMAKE_CURRENT_LIST_DIR}/shared_stub.c)
target_link_libraries(laya_shared PRIVATE -Wl,--whole-archive laya -Wl,--no-whole-archive)
target_link_options(laya_shared PRIVATE -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/laya.map)
if(NOT LAYA_SANITIZE)
  # every dependency on the link line (clang's sanitizer runtime is the executable's, so not there)
  target_link_options(laya_shared PRIVATE -Wl,--no-undefined)
endif()
set_property(TARGET laya_shared APPEND PROPERTY LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/laya.map)
target_include_directories(laya_shared INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# 0.x: a minor release may change the ABI (laya_options grows), so the soname carries it.
set_target_properties(laya_shared PROPERTIES
  OUTPUT_NAME laya
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  EXPORT_NAME laya)
set_target_properties(laya PROPERTIES EXPORT_NAME laya_static)
add_library(laya::laya ALIAS laya_shared)
add_library(laya::laya_static ALIAS laya)

# Installed pieces: the header, both libraries, the three programs, laya.pc, the CMake package.
install(FILES ${CMAKE_SOURCE_DIR}/include/laya.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev)
install(TARGETS laya_shared laya EXPORT layaTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
# The CUDA backend module: loaded by liblaya.so, liblaya.a and the programs on first use of a GPU
# (src/backend/cuda_loader.c), from beside the library or the programs' ../lib; nothing links it.
if(TARGET laya_cuda)
  install(TARGETS laya_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
foreach(_prog laya_cmd laya-serve laya-mcp)
  if(TARGET ${_prog})
    install(TARGETS ${_prog} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  endif()
endforeach()

set(_laya_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/laya)
install(EXPORT layaTargets NAMESPACE laya:: DESTINATION ${_laya_cmake_dir} COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/layaConfig.cmake.in
  ${CMAKE_BINARY_DIR}/pkg/layaConfig.cmake INSTALL_DESTINATION ${_laya_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/pkg/layaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/pkg/layaConfig.cmake ${CMAKE_BINARY_DIR}/pkg/layaConfigVersion.cmake
        DESTINATION ${_laya_cmake_dir} COMPONENT dev)

# laya.pc: relocatable (prefix from the .pc file's own place). Libs.private is what linking
# liblaya.a needs (pkg-config --static); the shared library needs none of it. Neither needs the
# CUDA libraries: the CUDA backend module brings its own (-ldl loads it).
file(RELATIVE_PATH LAYA_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" LAYA_PC_TO_PREFIX "${LAYA_PC_TO_PREFIX}")
set(_laya_private "")
foreach(_lib ${UTF8PROC_LIBRARIES} ${ONIG_LIBRARIES} ${CURL_LIBRARIES} pthread m ${CMAKE_DL_LIBS})
  string(APPEND _laya_private " -l${_lib}")
endforeach()

string(STRIP "${_laya_private}" LAYA_PC_LIBS_PRIVATE)
set(LAYA_COMPAT "0.4.15")
file(STRINGS ${CMAKE_SOURCE_DIR}/include/laya.h _compat REGEX "^#define LAYA_COMPAT_VERSION")
string(REGEX MATCH "\"([^\"]+)\"" _m "${_compat}")
if(CMAKE_MATCH_1)
  set(LAYA_COMPAT "${CMAKE_MATCH_1}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/laya.pc.in ${CMAKE_BINARY_DIR}/pkg/laya.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/pkg/laya.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
