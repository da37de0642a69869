# wick_layer(NAME SOURCES...): one folder's code as an OBJECT library with the project's
# include paths and flags. The wick library is made of every layer declared this way (the
# global property WICK_LAYER_TARGETS collects them).
function(wick_layer name)
  if(NOT ARGN)  # a layer folder that has no sources yet
    return()
  endif()
  add_library(${name} OBJECT ${ARGN})
  target_link_libraries(${name} PUBLIC wick_options)
  set_property(GLOBAL APPEND PROPERTY WICK_LAYER_TARGETS ${name})
endfunction()

# wick_layer_link(NAME [COMPONENT core|images|distributed] LIBS...): a layer's external
# libraries. Layers join wick as object files, which carry no link dependencies, so the
# top-level CMakeLists links wick itself to everything collected here (global properties
# WICK_EXTERNAL_LIBS_<component>). The component says which installed target carries the
# libraries to a program linking a static libwick: wick::wick those of core, wick::images
# and wick::distributed their own, so a program that uses neither needs no libpng, libjpeg
# or Gloo (docs/install.md).
function(wick_layer_link name)
  if(NOT TARGET ${name})
    return()
  endif()
  set(component core)
  set(libs ${ARGN})
  if(ARGV1 STREQUAL "COMPONENT")
    set(component ${ARGV2})
    list(REMOVE_AT libs 0 1)
  endif()
  target_link_libraries(${name} PUBLIC ${libs})
  set_property(GLOBAL APPEND PROPERTY WICK_EXTERNAL_LIBS_${component} ${libs})
endfunction()
