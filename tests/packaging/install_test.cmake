# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=... -DVERSION=... -DXVFB_RUN=... -P install_test.cmake
#
# `cmake --install` into WORK/prefix, then the installed tree is moved to WORK/moved (an install
# that remembered its prefix, or reached into the build or source tree, stops working) and run from
# an empty folder: --version, trace, vit on the installed demo and sample, the handout in Chinese
# (the installed catalogue), and the app headless,
# started from the installed menu entry's Exec lines. The installed binary must not contain the
# source or build tree's path at all.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/elsewhere ${WORK}/home)

function(run what)
  cmake_parse_arguments(R "" "EXPECT" "COMMAND" ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env HOME=${WORK}/home XDG_CONFIG_HOME=${WORK}/home/.config
                          PATH=${WORK}/moved/bin:/usr/bin:/bin ${R_COMMAND}
                  WORKING_DIRECTORY ${WORK}/elsewhere
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  if(R_EXPECT AND NOT out MATCHES "${R_EXPECT}")
    message(FATAL_ERROR "${what}: expected output matching '${R_EXPECT}', got:\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${what}")
endfunction()

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed:\n${out}\n${err}")
endif()
file(RENAME ${WORK}/prefix ${WORK}/moved)
set(exe ${WORK}/moved/bin/attnscope)
set(share ${WORK}/moved/share)
foreach(f bin/attnscope share/attnscope/models/demo_vit.safetensors share/attnscope/samples/06_triangle.png
          share/doc/attnscope/README.assets share/applications/attnscope.desktop share/icons/hicolor/scalable/apps/attnscope.svg
          share/icons/hicolor/256x256/apps/attnscope.png share/mime/packages/attnscope.xml
          share/man/man1/attnscope.1.gz share/bash-completion/completions/attnscope share/doc/attnscope/copyright
          share/locale/zh_CN/LC_MESSAGES/attnscope.mo)
  if(NOT EXISTS ${WORK}/moved/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()

# cmake --install updated the prefix's MIME database and the menu's MIME cache ("Open with").
foreach(check "mime/globs2:application/x-safetensors:\\*\\.safetensors"
              "applications/mimeinfo.cache:application/x-safetensors=attnscope\\.desktop")
  string(FIND "${check}" ":" colon)
  string(SUBSTRING "${check}" 0 ${colon} file)
  math(EXPR rest "${colon} + 1")
  string(SUBSTRING "${check}" ${rest} -1 pattern)
  file(STRINGS ${share}/${file} hits REGEX "${pattern}")
  if(NOT hits)
    message(FATAL_ERROR "after cmake --install, ${share}/${file} has no line matching ${pattern}")
  endif()
endforeach()

# No path into the source or build tree inside the binary (a fallback there would hide a broken install).
foreach(tree ${SOURCE_DIR} ${BUILD_DIR})
  string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" pattern "${tree}")
  file(STRINGS ${exe} hits REGEX "${pattern}")
  if(hits)
    list(GET hits 0 first)
    message(FATAL_ERROR "the installed binary names ${tree}: ${first}")
  endif()
endforeach()

run("--version" COMMAND attnscope --version EXPECT "^attnscope ${VERSION}\n")
run("trace" COMMAND attnscope trace EXPECT "checks: shapes")
run("vit on the installed demo and sample"
    COMMAND attnscope vit --model ${share}/attnscope/models/demo_vit.safetensors
            --image ${share}/attnscope/samples/06_triangle.png
    EXPECT "triangle")

# The Chinese catalogue found from the moved binary: the handout in Chinese.
run("handout --lang zh" COMMAND attnscope handout ${WORK}/handout_zh --lang zh --tokens 4 --dim 8 --heads 2)
file(READ ${WORK}/handout_zh/handout.md handout)
if(NOT handout MATCHES "多头注意力")
  message(FATAL_ERROR "the installed handout --lang zh is not in Chinese:\n${handout}")
endif()
message(STATUS "ok: the installed Chinese catalogue")

# The menu entry's Exec lines, as a desktop runs them (%f without a file expands to nothing), with
# --screenshot added so that the app renders headless and exits.
file(STRINGS ${share}/applications/attnscope.desktop exec_lines REGEX "^Exec=")
list(LENGTH exec_lines n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "expected 2 Exec lines (the app and its demo-vit action), found ${n}")
endif()
set(i 0)
foreach(line ${exec_lines})
  string(REGEX REPLACE "^Exec=" "" line "${line}")
  string(REPLACE " %f" "" line "${line}")
  separate_arguments(args UNIX_COMMAND "${line}")
  set(png ${WORK}/exec_${i}.png)
  run("${line} (menu entry Exec) --screenshot"
      COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${args} --screenshot ${png} --size 1600x1000)
  file(SIZE ${png} size)
  if(size LESS 20000)
    message(FATAL_ERROR "${png}: ${size} bytes, expected a rendered window")
  endif()
  math(EXPR i "${i} + 1")
endforeach()
message(STATUS "PASS: the installed tree works from another place and folder")
