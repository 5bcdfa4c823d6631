# attnscope FILE --screenshot OUT with a malformed FILE: exit status 2, exactly one line on stderr
# that starts with "attnscope: FILE", and no OUT written.
file(REMOVE ${OUT})
execute_process(
  COMMAND ${XVFB_RUN} -a -s "-screen 0 1600x1000x24" ${EXE} ${FILE} --screenshot ${OUT}
  RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT status EQUAL 2)
  message(FATAL_ERROR "exit status ${status}, expected 2; stderr: ${err}")
endif()
string(REGEX MATCHALL "\n" newlines "${err}")
list(LENGTH newlines lines)
if(NOT lines EQUAL 1 OR NOT err MATCHES "^attnscope: ${FILE}")
  message(FATAL_ERROR "expected one line starting with 'attnscope: ${FILE}', got: ${err}")
endif()
if(EXISTS ${OUT})
  message(FATAL_ERROR "${OUT} was written for a bad file")
endif()
