# Runs a command that must FAIL: passes only if it exits non-zero within
# TIMEOUT seconds and its output (stdout + stderr) matches every regex in
# EXPECT. Used for the mpi fault tests, where a wrong outcome could be either
# a hang (caught by TIMEOUT) or a silent success.
#   cmake -DCMD=<cmd|arg|...> -DEXPECT=<regex|regex...> -DTIMEOUT=<s> -P expect_failure.cmake
string(REPLACE "|" ";" cmd "${CMD}")
string(REPLACE "|" ";" expect "${EXPECT}")
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${cmd}
                TIMEOUT ${TIMEOUT}
                RESULT_VARIABLE rc
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
string(TIMESTAMP t1 "%s")
math(EXPR secs "${t1} - ${t0}")
set(all "${out}${err}")
message(STATUS "command: ${cmd}")
message(STATUS "exit: ${rc} after ${secs}s")
message(STATUS "output:\n${all}")
if(rc STREQUAL "0")
  message(FATAL_ERROR "the command succeeded; it must fail")
endif()
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the command did not exit by itself: ${rc}")
endif()
foreach(re IN LISTS expect)
  if(NOT all MATCHES "${re}")
    message(FATAL_ERROR "the output lacks '${re}'")
  endif()
endforeach()
message(STATUS "failed as expected in ${secs}s")
