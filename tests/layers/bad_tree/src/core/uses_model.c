/* a core file that includes the engine: the folder rule must refuse it */
#include "model/engine_stub.h"
