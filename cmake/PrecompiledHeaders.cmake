#===- PrecompiledHeaders.cmake - MLIR and tg headers parsed once --------===#
#
# Parsing MLIR's headers and the tg dialect's is most of a compiler
# library's translation unit: 6.5 of passes/remat/Remat.cpp's 9.9 s with
# g++ -O3. The object libraries of add_mlir_library (obj.Tg*, compiled with
# one set of flags) reuse the headers below precompiled once, from TgPch,
# an add_mlir_library of its own so that its flags are theirs. Each of them
# already includes these headers, so reading them first changes nothing
# but the time. -DTGC_PCH=OFF turns it off.
#
#===----------------------------------------------------------------------===#
option(TGC_PCH "Precompile the MLIR and tg headers of the compiler's libraries" ON)
if(NOT TGC_PCH)
  return()
endif()

add_mlir_library(TgPch
  ${PROJECT_SOURCE_DIR}/cmake/Pch.cpp

  DEPENDS
  TgIncGen
  TgInterfacesIncGen

  LINK_LIBS PUBLIC
  MLIRIR
)
target_precompile_headers(obj.TgPch PRIVATE
  <mlir/IR/Builders.h>
  <mlir/IR/BuiltinOps.h>
  <mlir/IR/PatternMatch.h>
  <mlir/Dialect/Func/IR/FuncOps.h>
  <mlir/Pass/Pass.h>
  <llvm/ADT/StringExtras.h>
  <llvm/Support/FormatVariadic.h>
  <llvm/Support/raw_ostream.h>
  "${PROJECT_SOURCE_DIR}/dialects/tg/IR/TgOps.h"
)

# Every obj.Tg* object library under these folders.
function(tgc_collect_object_libraries dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(found)
  foreach(target ${targets})
    if(target MATCHES "^obj\\.Tg" AND NOT target STREQUAL "obj.TgPch")
      list(APPEND found ${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    tgc_collect_object_libraries(${sub} more)
    list(APPEND found ${more})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

foreach(dir dialects planning passes frontend compiler)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    tgc_collect_object_libraries(${PROJECT_SOURCE_DIR}/${dir} libraries)
    foreach(library ${libraries})
      target_precompile_headers(${library} REUSE_FROM obj.TgPch)
    endforeach()
  endif()
endforeach()
