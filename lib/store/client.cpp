#include "store/client.hpp"
