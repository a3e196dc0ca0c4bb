# lathe_raw_string(VAR FILE DELIM): VAR becomes a C++ raw string literal R"DELIM(...)DELIM" holding
# FILE's text as is, for the generated sources that build text into the binary (programs, kernels,
# the emitted program's host main). The file becomes a configure dependency, so editing it re-runs
# CMake and re-embeds it; file(CONFIGURE) then rewrites the generated .cpp only when it changes.
function(lathe_raw_string var file delim)
  file(READ ${file} text)
  string(FIND "${text}" ")${delim}\"" delimiter_at)
  if(NOT delimiter_at EQUAL -1)
    message(FATAL_ERROR "${file} contains `)${delim}\"`, the delimiter of the embedded text")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  set(${var} "R\"${delim}(${text})${delim}\"" PARENT_SCOPE)
endfunction()
