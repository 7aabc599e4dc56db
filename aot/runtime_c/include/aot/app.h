/*
 * The one symbol a project adds to the generic runtime application: which model to serve.
 * The project generator writes it, e.g.
 *   const struct aot_model_desc* aot_app_model(void) { return &aot_mymodel_model; }
 */
#ifndef AOT_APP_H_
#define AOT_APP_H_

#include "aot/model.h"

#ifdef __cplusplus
extern "C" {
#endif

const struct aot_model_desc* aot_app_model(void);

#ifdef __cplusplus
}
#endif

#endif /* AOT_APP_H_ */
