# course_default_architectures(<out-var>): the CUDA architectures a build names when no
# preset or command line does. Each GPU nvidia-smi lists with compute capability 8.0 or
# newer (its own SASS), plus 90: the PTX and SASS checks of the Hopper lessons read sm_90
# code on every machine. Without such a GPU (a CI runner, a laptop), "80;90": the Ampere
# code that every newer GPU can run, and Hopper's. A GPU older than sm_80 is left out:
# on it the asynchronous copies silently become ordinary loads and stores.
function(course_default_architectures out_var)
  set(architectures "")
  find_program(COURSE_NVIDIA_SMI nvidia-smi)
  if(COURSE_NVIDIA_SMI)
    execute_process(
      COMMAND "${COURSE_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE capabilities RESULT_VARIABLE status ERROR_QUIET TIMEOUT 20)
    if(status EQUAL 0)
      string(REPLACE "\n" ";" capabilities "${capabilities}")
      foreach(capability IN LISTS capabilities)
        string(STRIP "${capability}" capability)
        if(capability MATCHES "^([0-9]+)\\.([0-9])$" AND CMAKE_MATCH_1 GREATER_EQUAL 8)
          list(APPEND architectures "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
        endif()
      endforeach()
    endif()
  endif()
  if(architectures STREQUAL "")
    set(architectures 80)
  endif()
  list(APPEND architectures 90)
  list(REMOVE_DUPLICATES architectures)
  list(SORT architectures COMPARE NATURAL)
  set(${out_var} "${architectures}" PARENT_SCOPE)
endfunction()
