# Warning flags shared by every course target, as an interface library to link.
add_library(course_warnings INTERFACE)
target_compile_options(course_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
  # `#pragma nv_diag_suppress` is how CCCL's own docs silence the expected warning about
  # __shared__ barriers having no dynamic initialisation; keep nvcc's other warnings on.
  $<$<COMPILE_LANGUAGE:CUDA>:--Werror=cross-execution-space-call>)
if(COURSE_WARNINGS_AS_ERRORS)
  target_compile_options(course_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()
