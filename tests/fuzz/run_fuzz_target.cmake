# Runs one fuzz target for a fixed time, from a fixed seed, over a scratch copy of its seed corpus (the fuzz_* ctest
# entries of CMakeLists.txt here). Arguments (-D): FUZZER, CORPUS, WORK, SECONDS, and optional
# SEEDS ("|"-separated read-only folders), DICT, MAX_LEN.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(COPY "${CORPUS}/" DESTINATION "${WORK}/corpus")
# NOTE: a fixed seed, so that what a run finds (CI's included) is found again by a run of the
# same target over the same corpus, at least as long.
set(args -seed=1 -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix=${WORK}/artifacts/)
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
execute_process(COMMAND "${FUZZER}" ${args} ${folders} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} exited with ${rc}; the failing input is in ${WORK}/artifacts")
endif()
