#===- EmbedText.cmake - A text file as a C++ string literal --------------===#
#
# cmake -DINPUT=file -DOUTPUT=file.inc -P EmbedText.cmake writes the contents
# of INPUT as one raw string literal, for `#include`-ing into an expression.
#
#===----------------------------------------------------------------------===#

file(READ ${INPUT} TEXT)
get_filename_component(NAME ${INPUT} NAME)
string(FIND "${TEXT}" ")tgc_embed\"" CLASH)
if(NOT CLASH EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter")
endif()
file(WRITE ${OUTPUT}.tmp
  "// Generated from ${NAME} by EmbedText.cmake; do not edit.\n"
  "R\"tgc_embed(${TEXT})tgc_embed\"\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
