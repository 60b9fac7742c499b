/* stopwords.h: word lists for the Latin-script language guess (see stopwords.c). */
#ifndef LAYA_ROUTER_STOPWORDS_H
#define LAYA_ROUTER_STOPWORDS_H

#include <stddef.h>
#include <stdint.h>

/* Languages in tie-break order: English first, then the foreign lists in the order a tie
 * between them is resolved. */
enum { STOP_EN = 0, STOP_NLANGS = 11 };
extern const char *const stop_lang_codes[STOP_NLANGS];

enum {
  STOP_SHARED = 1u << 0,          /* in more than one list, or a Nordic overlap word */
  STOP_EN_ONLY = 1u << 1,         /* in the English list and no other */
  STOP_COLLISION = 1u << 2,       /* an English word a foreign list holds: counts once */
  STOP_SHORT_SV = 1u << 3,        /* names Swedish in a two- or three-word fragment */
  STOP_NORDIC = 1u << 4,          /* shared by Swedish, Danish and Norwegian */
  STOP_COLLISION_CAND = 1u << 5   /* internal */
};

/* Look up a lowercased UTF-8 word. langs gets bit l for each list l holding it. Thread-safe. */
int stop_lookup(const char *word, size_t n, uint32_t *langs, uint32_t *flags);

#endif
