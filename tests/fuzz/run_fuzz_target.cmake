# Runs one fuzz target for a fixed number of inputs, from a fixed seed, over a scratch copy of its
# seed corpus (the fuzz_* ctest entries of CMakeLists.txt here). Arguments (-D): FUZZER, CORPUS,
# WORK, RUNS, and optional SEEDS ("|"-separated read-only folders), DICT, MAX_LEN.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(COPY "${CORPUS}/" DESTINATION "${WORK}/corpus")
# NOTE: a fixed seed and a fixed count of inputs (not a time budget), no corpus reloads, no
# mutations built from compared values (-use_cmp=0: they carry pointers) and, where setarch can,
# no address randomization (some coverage depends on addresses): two runs on one machine try the
# same inputs however busy it is, so CI's run (on the submitting session's machine) is the one a
# developer ran, and anything it finds is found again by running the test.
set(args -seed=1 -runs=${RUNS} -reload=0 -use_cmp=0 -timeout=10 -rss_limit_mb=2048
         -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/)
if(DICT)
  list(APPEND args -dict=${DICT})
endif()
if(MAX_LEN)
  list(APPEND args -max_len=${MAX_LEN})
endif()
# New inputs go to the first folder, the scratch copy; the others are only read.
set(folders "${WORK}/corpus")
string(REPLACE "|" ";" seeds "${SEEDS}")
foreach(folder IN LISTS seeds)
  if(IS_DIRECTORY "${folder}")
    list(APPEND folders "${folder}")
  endif()
endforeach()
set(launcher)
execute_process(COMMAND setarch -R true RESULT_VARIABLE setarch_rc OUTPUT_QUIET ERROR_QUIET)
if(setarch_rc EQUAL 0)
  set(launcher setarch -R)
endif()
execute_process(COMMAND ${launcher} "${FUZZER}" ${args} ${folders} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} exited with ${rc}; the failing input is in ${WORK}/artifacts")
endif()
