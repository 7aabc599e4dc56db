# CMake toolchain file for arm-none-eabi-gcc (bare metal, no OS).
#   cmake -S . -B build -DCMAKE_TOOLCHAIN_FILE=cmake/arm-none-eabi.cmake
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(AOT_CROSS "arm-none-eabi-" CACHE STRING "prefix of the cross tools")
set(CMAKE_C_COMPILER ${AOT_CROSS}gcc)
set(CMAKE_CXX_COMPILER ${AOT_CROSS}g++)
set(CMAKE_ASM_COMPILER ${AOT_CROSS}gcc)
set(CMAKE_OBJCOPY ${AOT_CROSS}objcopy)
set(CMAKE_SIZE ${AOT_CROSS}size)

# No OS to run test programs on: try_compile builds a static library instead.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
