# sy_embed_text(<target> INPUT <file> NAMESPACE <ns> SYMBOL <name>): embeds a text file
# (the dashboard page, the OpenAPI document) into <target> at build time. A generated .cc
# defines `const char <name>[]` (the bytes, NUL-terminated) and `const unsigned long
# <name>Size` in namespace <ns>; it is regenerated whenever the file changes. Declare
# both `extern` where they are used.
if(CMAKE_SCRIPT_MODE_FILE)
  # Script mode: cmake -DIN=... -DOUT=... -DNS=... -DSYMBOL=... -DLABEL=... -P EmbedText.cmake
  file(READ "${IN}" hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR size "${hex_len} / 2")
  # As char literals: bytes above 0x7f (UTF-8 text) would narrow as int constants.
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  file(WRITE "${OUT}.tmp"
       "// Generated from ${LABEL} by cmake/EmbedText.cmake. Do not edit.\n"
       "namespace ${NS} {\n"
       "extern const char ${SYMBOL}[];\n"
       "extern const unsigned long ${SYMBOL}Size;\n"
       "const char ${SYMBOL}[] = {\n${bytes}0x00};\n"
       "const unsigned long ${SYMBOL}Size = ${size}UL;\n"
       "}  // namespace ${NS}\n")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

set(_SY_EMBED_TEXT_SCRIPT ${CMAKE_CURRENT_LIST_FILE})
function(sy_embed_text target)
  cmake_parse_arguments(ARG "" "INPUT;NAMESPACE;SYMBOL" "" ${ARGN})
  get_filename_component(name ${ARG_INPUT} NAME)
  string(MAKE_C_IDENTIFIER "${name}" id)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${id}.cc)
  file(RELATIVE_PATH label ${PROJECT_SOURCE_DIR} ${ARG_INPUT})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${ARG_INPUT} -DOUT=${out} -DNS=${ARG_NAMESPACE}
            -DSYMBOL=${ARG_SYMBOL} -DLABEL=${label} -P ${_SY_EMBED_TEXT_SCRIPT}
    DEPENDS ${ARG_INPUT} ${_SY_EMBED_TEXT_SCRIPT}
    COMMENT "Embedding ${label}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
