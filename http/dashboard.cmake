# Embeds http/dashboard.html into sy_http at build time: a generated .cc defines
# kDashboardHtml (the bytes, NUL-terminated) and kDashboardHtmlSize. Included from
# http/CMakeLists.txt after sy_http is defined; regenerated whenever the html changes.
if(CMAKE_SCRIPT_MODE_FILE)
  # Script mode: cmake -DIN=... -DOUT=... -P dashboard.cmake
  file(READ "${IN}" hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR size "${hex_len} / 2")
  # As char literals: bytes above 0x7f (UTF-8 text) would narrow as int constants.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  file(WRITE "${OUT}.tmp"
       "// Generated from http/dashboard.html by http/dashboard.cmake. Do not edit.\n"
       "namespace switchyard::http {\n"
       "extern const char kDashboardHtml[];\n"
       "extern const unsigned long kDashboardHtmlSize;\n"
       "const char kDashboardHtml[] = {\n${bytes}0x00};\n"
       "const unsigned long kDashboardHtmlSize = ${size}UL;\n"
       "}  // namespace switchyard::http\n")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

set(_sy_dash_in ${CMAKE_CURRENT_LIST_DIR}/dashboard.html)
set(_sy_dash_out ${CMAKE_CURRENT_BINARY_DIR}/dashboard_html.cc)
add_custom_command(
  OUTPUT ${_sy_dash_out}
  COMMAND ${CMAKE_COMMAND} -DIN=${_sy_dash_in} -DOUT=${_sy_dash_out}
          -P ${CMAKE_CURRENT_LIST_DIR}/dashboard.cmake
  DEPENDS ${_sy_dash_in} ${CMAKE_CURRENT_LIST_DIR}/dashboard.cmake
  COMMENT "Embedding http/dashboard.html"
  VERBATIM)
target_sources(sy_http PRIVATE ${CMAKE_CURRENT_LIST_DIR}/dashboard.cc ${_sy_dash_out})
