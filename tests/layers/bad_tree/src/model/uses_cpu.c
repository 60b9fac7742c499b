/* a model file that includes a backend's own header (not backend/backend.h): refused */
#include "backend/cpu/cpu_stub.h"
