// Declarations-only stand-in for Gloo's gloo/transport/device.h (see
// ../context.h): c10d holds devices and unbound buffers only through
// shared_ptr / unique_ptr, made and destroyed inside libtorch_cpu.so.
#pragma once

namespace gloo {
namespace transport {

class Device;
class UnboundBuffer;

}  // namespace transport
}  // namespace gloo
