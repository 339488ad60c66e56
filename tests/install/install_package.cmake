# Installs the build tree BUILD_DIR into PREFIX (emptied first) and checks what was installed: no
# private header, and the attograd binary with its data folder. The consumers of
# run_consumer.cmake are built against this prefix. Any step failing fails the test with that
# step's output.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_package: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${PREFIX})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
# Nothing private may be installed: the sealed insides stay in the source tree.
foreach(private autograd/detail/tensor_impl.h autograd/ops_internal.h)
  if(EXISTS ${PREFIX}/include/${private})
    message(FATAL_ERROR "install_package: the private header ${private} was installed")
  endif()
endforeach()
# The attograd binary is installed, and finds GPT-2's vocabulary in the installed data folder
# beside it (share/attograd/gpt2): "Hello world" is GPT-2's ids 15496 995. With that folder's
# vocab.bpe gone, the error names the installed folder: it is looked in before the source tree.
run("the installed attograd" ${PREFIX}/bin/attograd tokenize --tokenizer gpt2 "Hello world")
if(NOT output MATCHES "15496 995")
  message(FATAL_ERROR "install_package: the installed attograd tokenized 'Hello world' as\n${output}")
endif()
set(vocab ${PREFIX}/share/attograd/gpt2/vocab.bpe)
file(RENAME ${vocab} ${PREFIX}/vocab.bpe)
execute_process(COMMAND ${PREFIX}/bin/attograd tokenize --tokenizer gpt2 "Hello world"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(RENAME ${PREFIX}/vocab.bpe ${vocab})
if(rc EQUAL 0 OR NOT err MATCHES "is the installed data folder beside")
  message(FATAL_ERROR "install_package: without the installed vocab.bpe, expected an error naming "
                      "the installed data folder, got (${rc}):\n${out}${err}")
endif()
