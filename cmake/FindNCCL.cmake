# FindNCCL: NVIDIA's collective communication library, from either place the course's machines
# keep it:
#   1. the CUDA toolkit folder (CUDAToolkit_INCLUDE_DIRS, CUDAToolkit_LIBRARY_DIR,
#      /usr/local/cuda/{include,lib,lib64}): the CPU machines and CI;
#   2. the Python package nvidia-nccl-cu13 (a PyTorch environment): `import nvidia.nccl`
#      gives a namespace package (no __file__) whose __path__ is a folder with include/ and
#      lib/, where the library may be only libnccl.so.2
#      (no unversioned libnccl.so, which find_library would look for).
# NCCL_ROOT (a folder with include/ and lib/) is searched first when set.
#
# Defines NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_LIBRARY_DIR, NCCL_VERSION and the
# imported target NCCL::nccl. Executables linking it get NCCL_LIBRARY_DIR as their RPATH
# (the Python package's folder is on no loader path).
include(FindPackageHandleStandardArgs)

set(_nccl_hints "")
if(NCCL_ROOT)
  list(APPEND _nccl_hints "${NCCL_ROOT}")
endif()
if(DEFINED ENV{NCCL_ROOT})
  list(APPEND _nccl_hints "$ENV{NCCL_ROOT}")
endif()
foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  get_filename_component(parent "${dir}" DIRECTORY)
  list(APPEND _nccl_hints "${parent}")
endforeach()
if(CUDAToolkit_LIBRARY_DIR)
  get_filename_component(parent "${CUDAToolkit_LIBRARY_DIR}" DIRECTORY)
  list(APPEND _nccl_hints "${parent}")
endif()
list(APPEND _nccl_hints /usr/local/cuda)
if(NOT NCCL_PYTHON_DIR)
  # The project's Python first (find_package(Python3)), then python3 / python on the PATH (a
  # PyTorch environment's interpreter need not be the one CMake picked).
  find_program(_nccl_path_python3 NAMES python3)
  find_program(_nccl_path_python NAMES python)
  set(NCCL_PYTHON_DIR "")
  foreach(python IN ITEMS "${Python3_EXECUTABLE}" "${_nccl_path_python3}" "${_nccl_path_python}")
    if(NCCL_PYTHON_DIR OR NOT python OR NOT EXISTS "${python}")
      continue()
    endif()
    execute_process(
      COMMAND "${python}" -c
              "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])"
      OUTPUT_VARIABLE _nccl_py_out RESULT_VARIABLE _nccl_py_status ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_nccl_py_status EQUAL 0 AND IS_DIRECTORY "${_nccl_py_out}")
      set(NCCL_PYTHON_DIR "${_nccl_py_out}")
    endif()
  endforeach()
  if(NCCL_PYTHON_DIR)
    set(NCCL_PYTHON_DIR "${NCCL_PYTHON_DIR}" CACHE PATH "nvidia-nccl-cu13's folder (include/, lib/)")
  endif()
endif()
if(NCCL_PYTHON_DIR)
  list(APPEND _nccl_hints "${NCCL_PYTHON_DIR}")
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATHS ${_nccl_hints}
          PATH_SUFFIXES include NO_DEFAULT_PATH)
# The unversioned name first, then the runtime's soname (all the Python package ships).
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${CUDAToolkit_LIBRARY_DIR}
             PATHS ${_nccl_hints} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${part}[ \t]+([0-9]+).*" "\\1" _nccl_${part}
                         "${_nccl_version_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR
                                  VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  get_filename_component(NCCL_LIBRARY_DIR "${NCCL_LIBRARY}" DIRECTORY)
  add_library(NCCL::nccl SHARED IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  # A library found by its soname has no SONAME lookup problem; one found as libnccl.so
  # links as -lnccl's soname libnccl.so.2 either way. The RPATH makes both load at run time.
  set_property(TARGET NCCL::nccl PROPERTY IMPORTED_NO_SONAME FALSE)
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
