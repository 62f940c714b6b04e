# eslease_add_test(NAME <name> SOURCES <files...> LIBS <targets...> LABEL <label>)
# Builds one GoogleTest executable into build/bin and registers its cases with CTest under
# one label: unit, integration or emulator (ctest -L <label>).
function(eslease_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  include(GoogleTest)
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS ${T_LABEL}
    DISCOVERY_TIMEOUT 60)
  # `ninja unit-tests` builds every unit test and nothing else (CI's sanitizer run).
  if(T_LABEL STREQUAL "unit")
    if(NOT TARGET unit-tests)
      add_custom_target(unit-tests)
    endif()
    add_dependencies(unit-tests ${T_NAME})
  endif()
endfunction()

# The real engine (tests/engines): CTest's fixture `opensearch` starts one OpenSearch node for
# the tests that require it (label real-engine) and writes its URL into this file, which the
# C++ harness (tests/integration/es/es_fixture.h) reads.
set(ESLEASE_ENGINE_URL_FILE ${CMAKE_BINARY_DIR}/real-engine/opensearch.url)

# eslease_add_real_engine_tests(<target>) registers the cases of a GoogleTest executable made by
# eslease_add_test a second time, as real_engine.<case>, against that node
# (ESLEASE_TEST_BACKEND=opensearch); cases that need the emulator's own store skip there.
function(eslease_add_real_engine_tests target)
  target_compile_definitions(${target} PRIVATE ESLEASE_ENGINE_URL_FILE="${ESLEASE_ENGINE_URL_FILE}")
  gtest_discover_tests(${target}
    TEST_PREFIX "real_engine."
    PROPERTIES LABELS real-engine ENVIRONMENT ESLEASE_TEST_BACKEND=opensearch FIXTURES_REQUIRED opensearch
    DISCOVERY_TIMEOUT 60)
endfunction()
