# Installs the build tree BUILD_DIR into WORK_DIR/prefix, builds CONSUMER_DIR against it in
# WORK_DIR/build, runs it and compares its output with the expected values. Any step failing
# fails the test with that step's output.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# Nothing private may be installed: the sealed insides stay in the source tree.
foreach(private autograd/detail/tensor_impl.h autograd/ops_internal.h)
  if(EXISTS ${WORK_DIR}/prefix/include/${private})
    message(FATAL_ERROR "install_consumer: the private header ${private} was installed")
  endif()
endforeach()
# The attograd binary is installed, and finds GPT-2's vocabulary in the installed data folder
# beside it (share/attograd/gpt2): "Hello world" is GPT-2's ids 15496 995. With that folder's
# vocab.bpe gone, the error names the installed folder: it is looked in before the source tree.
run("the installed attograd" ${WORK_DIR}/prefix/bin/attograd tokenize --tokenizer gpt2 "Hello world")
if(NOT output MATCHES "15496 995")
  message(FATAL_ERROR "install_consumer: the installed attograd tokenized 'Hello world' as\n${output}")
endif()
file(RENAME ${WORK_DIR}/prefix/share/attograd/gpt2/vocab.bpe ${WORK_DIR}/vocab.bpe)
execute_process(COMMAND ${WORK_DIR}/prefix/bin/attograd tokenize --tokenizer gpt2 "Hello world"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "is the installed data folder beside")
  message(FATAL_ERROR "install_consumer: without the installed vocab.bpe, expected an error naming "
                      "the installed data folder, got (${rc}):\n${out}${err}")
endif()
file(RENAME ${WORK_DIR}/vocab.bpe ${WORK_DIR}/prefix/share/attograd/gpt2/vocab.bpe)
run("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER} -DCMAKE_CXX_FLAGS=${CXX_FLAGS})
run("building the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("running the consumer" ${WORK_DIR}/build/consumer)
# [[1, 2], [3, 4]] @ [[5, 6], [7, 8]]; and the loss of femto (seed 1) on tokens 0..7 predicting
# 1..8 as the in-tree build computes it: near ln(65) = 4.1744, as an untrained model's should be.
set(expected "matmul 19 22 43 50\nfemto loss 4.175968\n")
if(NOT output STREQUAL expected)
  message(FATAL_ERROR "install_consumer: expected\n${expected}got\n${output}")
endif()
