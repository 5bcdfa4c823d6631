# Under software GL the clear paints the panels' backgrounds and the gaps are filled around them
# (app/gui/logic/backdrop.hpp). The screenshots must be the very pixels ImGui draws with its own
# backgrounds (ATTNSCOPE_SOFTGL_OFF=backdrop): the tiled default layout (the clear paints every
# panel) and the Cost panel over the others (it fills its own background). --bench-gui must report
# that the clear painted backgrounds, else the comparison would prove nothing.
set(layouts "default" "cost_over_panels")
set(args_default --size 1600x1000)
set(args_cost_over_panels --bug reshape-without-permute --follow "q[0,1,0,0]" --cost --size 1600x1000)
foreach(layout ${layouts})
  foreach(mode clear imgui)
    set(png ${OUT_DIR}/backgrounds_${layout}_${mode}.png)
    file(REMOVE ${png})
    set(env --unset=XDG_CONFIG_HOME)
    if(mode STREQUAL "imgui")
      list(APPEND env ATTNSCOPE_SOFTGL_OFF=backdrop)
    endif()
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env ${env} ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${EXE} ${args_${layout}} --screenshot ${png}
      RESULT_VARIABLE status ERROR_VARIABLE err)
    if(NOT status EQUAL 0 OR NOT EXISTS ${png})
      message(FATAL_ERROR "${layout} (${mode}): exit status ${status}: ${err}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT_DIR}/backgrounds_${layout}_clear.png
                          ${OUT_DIR}/backgrounds_${layout}_imgui.png RESULT_VARIABLE differ)
  if(NOT differ EQUAL 0)
    message(FATAL_ERROR "${layout}: the backgrounds painted by the clear differ from ImGui's: "
                        "${OUT_DIR}/backgrounds_${layout}_clear.png against ..._imgui.png")
  endif()
endforeach()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=XDG_CONFIG_HOME ATTNSCOPE_BENCH_GUI_FRAMES=2,3
          ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${EXE} --bench-gui --size 1600x1000
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0 OR NOT out MATCHES "\"idle_frame_backgrounds_by_clear\":[1-9]")
  message(FATAL_ERROR "--bench-gui did not report backgrounds painted by the clear (status ${status}): ${out}${err}")
endif()
message(STATUS "PASS: ${layouts}: the same pixels as ImGui's backgrounds")
