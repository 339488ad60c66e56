# How the installed package attograd finds each library its targets link: one branch per imported
# target, naming the package that defines it as the project's own find_package calls do.
# Installed beside attogradConfig.cmake, which calls attograd_find_dependency(<target>) for each
# target the requested components link (the table cmake/package.cmake writes from the targets'
# link lists).
#
# The build includes this file too and calls it, with ATTOGRAD_CHECKING_DEPENDENCIES set, for
# every imported target an installed library links: then nothing is looked for, and a target
# without a branch here stops the configure (the else() below) instead of making a package that
# cannot find it.
#
# A macro, not a function: find_dependency's return() on failure must leave attogradConfig.cmake,
# with attograd_FOUND false and attograd_NOT_FOUND_MESSAGE naming the missing package.
include(CMakeFindDependencyMacro)

macro(attograd_find_dependency target)
  # The find_package arguments whose package defines the target.
  if("${target}" MATCHES "^hwy::(hwy|hwy_contrib)$")
    set(_attograd_package hwy)
  elseif("${target}" STREQUAL "Threads::Threads")
    set(_attograd_package Threads)
  elseif("${target}" STREQUAL "Boost::headers")
    set(_attograd_package Boost 1.74)
  elseif("${target}" STREQUAL "nlohmann_json::nlohmann_json")
    set(_attograd_package nlohmann_json)
  elseif("${target}" STREQUAL "CURL::libcurl")
    set(_attograd_package CURL)
  elseif("${target}" STREQUAL "MPI::MPI_CXX")
    set(MPI_CXX_SKIP_MPICXX ON)  # only MPI's C API is used (gpt/CMakeLists.txt)
    set(_attograd_package MPI COMPONENTS CXX)
  elseif("${target}" STREQUAL "PkgConfig::PCRE2")  # and then pkg-config's libpcre2-8, below
    set(_attograd_package PkgConfig)
  else()
    message(FATAL_ERROR "attograd links ${target}, and cmake/attograd-dependencies.cmake has no "
                        "branch saying how the installed package finds it: add one")
  endif()
  # Not when found already (by an earlier component, or by the consumer itself), nor when checking.
  if(NOT TARGET ${target} AND NOT ATTOGRAD_CHECKING_DEPENDENCIES)
    find_dependency(${_attograd_package})
    if("${target}" STREQUAL "PkgConfig::PCRE2")
      pkg_check_modules(PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
      if(NOT PCRE2_FOUND)
        set(attograd_FOUND FALSE)
        set(attograd_NOT_FOUND_MESSAGE
          "attograd could not be found because dependency PCRE2 (pkg-config libpcre2-8) could not be found.")
        return()
      endif()
    endif()
  endif()
endmacro()
