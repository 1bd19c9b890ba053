# Installs the build tree into WORK/prefix, builds examples/installed (the quickstart, another
# project using find_package(eqfuse)) against it and runs it, runs the installed tool, and
# imports the installed Python package. Run by CTest (install_consumer_test):
#   cmake -DBUILD=DIR -DSOURCE=DIR -DWORK=DIR [-DPYTHON=EXE -DPYTHON_DIR=lib/python3.X/...] \
#         -P consumer_test.cmake
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
foreach(f lib/cmake/eqfuse/eqfuseConfig.cmake include/eqfuse/optimizer/optimize.h bin/eqfuse
          share/eqfuse/rules/algebra.rules)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the installed tree lacks ${f}")
  endif()
endforeach()
step("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE}/examples/installed -B ${WORK}/build
     -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
step("run the consumer" ${WORK}/build/quickstart ${WORK}/quickstart.onnx)
message(STATUS "${step_output}")
step("the installed tool" ${prefix}/bin/eqfuse info ${WORK}/quickstart.onnx)
if(PYTHON)
  step("import the installed Python package" ${CMAKE_COMMAND} -E env
       PYTHONPATH=${prefix}/${PYTHON_DIR} ${PYTHON} -c
       "import eqfuse, sys; assert eqfuse.__file__.startswith(sys.argv[1]), eqfuse.__file__; print(eqfuse.run(sys.argv[2], {'x': __import__('numpy').ones((1, 4), 'float32')}))"
       ${prefix} ${WORK}/quickstart.onnx)
  message(STATUS "${step_output}")
endif()
