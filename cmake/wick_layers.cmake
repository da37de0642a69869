# wick_layer(NAME SOURCES...): one folder's code as an OBJECT library with the project's
# include paths and flags; the wick library is made of all of them.
function(wick_layer name)
  add_library(${name} OBJECT ${ARGN})
  target_link_libraries(${name} PUBLIC wick_options)
endfunction()
