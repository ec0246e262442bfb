# tensorhub_coord_grpc: the gRPC control plane (client, server, codec, standby). Included from
# lib/coord/CMakeLists.txt after tensorhub_coord_protocol exists. Needs Protobuf (module mode),
# gRPC (config mode) and TENSORHUB_GRPC_CPP_PLUGIN from share/cmake/TensorHubDependencies.cmake.
#
# tensorhub_proto: C++ generated from share/proto/tensorhub.proto, built as its own static
# library so that the generated code gets neither our warning flags nor -Werror. It is linked
# PRIVATE into tensorhub_coord_grpc: no public TensorHub header includes generated code or gRPC.

get_filename_component(_th_proto_dir "${CMAKE_CURRENT_LIST_DIR}/../../share/proto" ABSOLUTE)
set(_th_proto_src "${_th_proto_dir}/tensorhub.proto")
set(_th_proto_out "${CMAKE_CURRENT_BINARY_DIR}/generated")
set(_th_proto_generated
  "${_th_proto_out}/tensorhub.pb.h"
  "${_th_proto_out}/tensorhub.pb.cc"
  "${_th_proto_out}/tensorhub.grpc.pb.h"
  "${_th_proto_out}/tensorhub.grpc.pb.cc")

if(TARGET protobuf::protoc)
  set(_th_protoc $<TARGET_FILE:protobuf::protoc>)
elseif(Protobuf_PROTOC_EXECUTABLE)
  set(_th_protoc "${Protobuf_PROTOC_EXECUTABLE}")
else()
  message(FATAL_ERROR "protoc not found (install protobuf-compiler)")
endif()
if(NOT TENSORHUB_GRPC_CPP_PLUGIN)
  message(FATAL_ERROR "grpc_cpp_plugin not found (install protobuf-compiler-grpc)")
endif()

file(MAKE_DIRECTORY "${_th_proto_out}")
add_custom_command(
  OUTPUT ${_th_proto_generated}
  COMMAND ${_th_protoc}
    --proto_path=${_th_proto_dir}
    --cpp_out=${_th_proto_out}
    --grpc_out=${_th_proto_out}
    --plugin=protoc-gen-grpc=${TENSORHUB_GRPC_CPP_PLUGIN}
    ${_th_proto_src}
  DEPENDS "${_th_proto_src}" ${TENSORHUB_GRPC_CPP_PLUGIN}
  COMMENT "Generating C++ from tensorhub.proto"
  VERBATIM)

add_library(tensorhub_proto STATIC ${_th_proto_generated})
target_compile_features(tensorhub_proto PUBLIC cxx_std_20)
set_target_properties(tensorhub_proto PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
# Generated code is not ours to fix: silence its warnings and never let -Werror reach it.
target_compile_options(tensorhub_proto PRIVATE -w)
target_include_directories(tensorhub_proto SYSTEM PUBLIC "$<BUILD_INTERFACE:${_th_proto_out}>")
target_link_libraries(tensorhub_proto PUBLIC protobuf::libprotobuf gRPC::grpc++)

add_library(tensorhub_coord_grpc
  ${CMAKE_CURRENT_LIST_DIR}/src/auth.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_auth.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_client.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_codec_calls.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_codec_core.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_codec_manifest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_manifest_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_codec_plans.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_codec_status.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_codec_workers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_long_polls.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_malformed.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/grpc_server.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/standby.cpp)
add_library(TensorHub::coord_grpc ALIAS tensorhub_coord_grpc)
th_target_defaults(tensorhub_coord_grpc)
target_link_libraries(tensorhub_coord_grpc PUBLIC tensorhub_coord_protocol tensorhub_core Threads::Threads
                      PRIVATE tensorhub_proto)
