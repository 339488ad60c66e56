# How the installed package attograd finds each library its targets link: one branch per imported
# target, naming the package that defines it as the project's own find_package calls do.
# Installed beside attogradConfig.cmake, which calls attograd_find_dependency(<target> <found>)
# for each target the requested components link (the table cmake/package.cmake writes from the
# targets' link lists).
#
# The build includes this file too and calls it, with ATTOGRAD_CHECKING_DEPENDENCIES set, for
# every imported target an installed library links: then nothing is looked for, and a target
# without a branch here stops the configure (the else() below) instead of making a package that
# cannot find it.
#
# Each package is looked for QUIET and never REQUIRED, whatever the consumer's find_package said:
# whether a missing one fails the consumer's configure depends on the component that needs it
# (attogradConfig.cmake). find_dependency would pass the consumer's REQUIRED on, and then a
# component asked for in OPTIONAL_COMPONENTS would stop the configure.
#
# A macro, not a function: the packages' variables (CURL_VERSION_STRING, MPI_CXX_...) reach the
# consumer as they would from its own find_package call.

# attograd_find_dependency(<target> <found>): sets <found> TRUE when the imported target <target>
# is defined (before, or by finding its package now), else FALSE and <found>_PACKAGE to the
# package's name and the Debian package of its development files, for the message
# ("CURL (Debian: libcurl4-openssl-dev)", "PCRE2 (pkg-config libpcre2-8; Debian: libpcre2-dev)").
macro(attograd_find_dependency target found)
  # The find_package arguments whose package defines the target.
  if("${target}" MATCHES "^hwy::(hwy|hwy_contrib)$")
    set(_attograd_package hwy)
    set(_attograd_debian libhwy-dev)
  elseif("${target}" STREQUAL "Threads::Threads")
    set(_attograd_package Threads)
    set(_attograd_debian libc6-dev)
  elseif("${target}" STREQUAL "Boost::headers")
    set(_attograd_package Boost 1.74)
    set(_attograd_debian libboost-dev)
  elseif("${target}" STREQUAL "nlohmann_json::nlohmann_json")
    set(_attograd_package nlohmann_json)
    set(_attograd_debian nlohmann-json3-dev)
  elseif("${target}" STREQUAL "CURL::libcurl")
    set(_attograd_package CURL)
    set(_attograd_debian libcurl4-openssl-dev)
  elseif("${target}" STREQUAL "MPI::MPI_CXX")
    set(MPI_CXX_SKIP_MPICXX ON)  # only MPI's C API is used (gpt/CMakeLists.txt)
    set(_attograd_package MPI COMPONENTS CXX)
    set(_attograd_debian libopenmpi-dev)
  elseif("${target}" STREQUAL "PkgConfig::PCRE2")  # and then pkg-config's libpcre2-8, below
    set(_attograd_package PkgConfig)
    set(_attograd_debian pkg-config)
  else()
    message(FATAL_ERROR "attograd links ${target}, and cmake/attograd-dependencies.cmake has no "
                        "branch saying how the installed package finds it: add one")
  endif()
  set(${found} TRUE)
  # Not when found already (by an earlier component, or by the consumer itself), nor when checking.
  if(NOT TARGET ${target} AND NOT ATTOGRAD_CHECKING_DEPENDENCIES)
    list(GET _attograd_package 0 ${found}_PACKAGE)
    set(${found}_PACKAGE "${${found}_PACKAGE} (Debian: ${_attograd_debian})")
    find_package(${_attograd_package} QUIET)
    if("${target}" STREQUAL "PkgConfig::PCRE2" AND PkgConfig_FOUND)
      pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
      set(${found}_PACKAGE "PCRE2 (pkg-config libpcre2-8; Debian: libpcre2-dev)")
    endif()
    if(NOT TARGET ${target})
      set(${found} FALSE)
    endif()
  endif()
endmacro()
