# The PyTorch DDP communication hook (python/seedance_train/ddp_hook.py), which loads the
# compress section of the C interface from seedance_train_c (clip.cmake) with ctypes, and its
# test: 2 gloo ranks on loopback training the digits MLP with FP32 all-reduce and the 1-bit hook.
if(SEEDANCE_BUILD_TESTS AND TARGET seedance_train_c)
  # Exits 77 (skipped) when torch or sklearn is not importable, unless SEEDANCE_REQUIRE_DATA=1.
  add_test(NAME train_ddp_hook_test
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/python/seedance_train/ddp_hook_test.py)
  set_tests_properties(
    train_ddp_hook_test
    PROPERTIES ENVIRONMENT
               "SEEDANCE_TRAIN_LIB=$<TARGET_FILE:seedance_train_c>;PYTHONPATH=${PROJECT_SOURCE_DIR}/python"
               SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2)
endif()
