/*
 * stopwords.c: the function-word lists behind the Latin-script language guess.
 *
 * These lists are laya.c's own, written for this project from the closed word classes of each
 * language (articles, pronouns, auxiliaries, prepositions, conjunctions, question words and the
 * handful of politeness words support text is full of). The rules that read them follow Laya
 * 0.4.15's lang.py (a word shared by several lists names no language; an English word that is
 * also a foreign function word counts once), so routing agrees with Laya's on real text; the
 * agreement is measured by tests/router against decisions recorded from the real package.
 *
 * Design choices, all about what a word in plain English text does to the verdict:
 * - Foreign lists leave out words that are ordinary English tokens ("de", "en", "a", "no",
 *   "on", "car", "die" is kept in German because German prose is full of it and an English
 *   sentence that uses it also carries several English-only words).
 * - The English list keeps to function words; content words ("time", "people") are left out so
 *   a list of names or a product code stays undecided rather than English.
 * - Romanised Bangla and Azerbaijani are typed without a keyboard for the script, so ASCII
 *   spellings are listed beside the proper ones.
 */
#include "router/stopwords.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const kEnglish =
 "the and is are as nor down was were be been being am does did doing done have has having will would "
 "shall should can could might must may to of in for with on at from by into onto about "
 "between through during without within after before among toward towards "
 "i you we they she him his its our ours your yours their theirs them it "
 " this that these those there "
 "here where when why how what which who whom if then than because while "
 " unless until not never always already yet ever very too only any some many much "
 "every each both few please doesn didn isn aren wasn weren haven hasn hadn "
 "couldn wouldn shouldn won dont doesnt didnt isnt wasnt havent cant wont ive youre thats "
 "whats theres im";

static const char *const kFrench =
 "le la les une des du au aux ce cet cette ces et ou où est sont était été être avoir ai "
 "avons avez ont je tu il elle nous vous ils elles mon ma mes ton ta tes sa ses notre nos "
 "votre vos leur leurs que qui quoi dont pour dans sur sous avec sans pas plus très tres "
 "bien tout tous toute toutes aussi mais donc comme quand comment pourquoi alors déjà deja "
 "encore toujours jamais rien merci bonjour bonsoir oui peut peux veux veut voudrais "
 "dois doit fait faire suis êtes etes chez depuis parce ceci cela ça ca aujourd hui hier "
 "demain jour jours mois semaine deux trois";

static const char *const kGerman =
    "der die das und ist sind war waren ein eine einen einem einer eines den dem des nicht "
    "kein keine keinen mit für fur auf von zu zum zur sich auch werden wird wurde wurden haben "
    "habe hat hatte oder aber ich du er sie wir ihr mir mich dir dich uns euch mein meine "
    "meinen meinem meiner dein deine ihre ihren unser unsere dieser diese dieses diesen diesem "
    "wie wo wann warum welche welcher welches was wer im in aus bei nach noch schon bitte danke "
    "heute gestern morgen jetzt kann kannst können konnen muss müssen soll sollte möchte "
    "mochte gibt dass weil wenn aber sehr nur immer über uber";

static const char *const kSpanish =
 "el los las que por con para una del se es son está esta este estos estas está están "
 "estan como pero más mas muy hay sus la un y al lo le les su mi mis tu tus nos yo usted "
 "ustedes ellos ellas nosotros ni dos tres fue fueron ser estoy tiene tienen tengo puede "
 "pueden quiero necesito hemos han sobre entre cuando donde dónde porque aunque también "
 "tambien ya eso esto esa ese nada algo aquí aqui hoy ayer mañana gracias hola cómo qué "
 "todavía todavia ";

static const char *const kPortuguese =
    "os as que em um uma para com não nao é se do da dos das mas são sao está esta este essa "
    "esse isso isto muito muita pelo pela o e na nas nos ao aos por foi era ser sou estou "
    "estamos tem tenho temos pode podem quero preciso eu meu minha meus minhas seu sua seus "
    "suas nosso nossa você voce vocês voces vc pra aqui ali onde quando porque mais já ja "
    "ainda agora hoje ontem amanhã amanha dois três tres tudo nada obrigado obrigada olá ola "
    "também tambem gostaria consigo depois antes então entao ninguém ninguem alguém alguem "
    "nenhum nenhuma estava ficou fiz deu boa tarde noite";

static const char *const kItalian =
    "il lo gli che di per con non è si del della dello dei delle degli sono questo questa "
    "questi queste anche come più piu nella nel nei alla alle al agli la le un uno una e ed o "
    "da dal dalla dai su sul sulla tra fra mi ci ne ho hai ha abbiamo avete hanno era stato "
    "stata essere devo deve voglio vorrei posso può puo mio mia miei tuo tua suo sua quando "
    "dove perché perche molto poco sempre mai già gia ancora adesso oggi ieri domani grazie "
    "ciao buongiorno scusa cosa";

static const char *const kDutch =
 "het een van is op te dat niet met voor zijn aan door maar ook worden deze naar wordt "
    "geen hebben heeft zou jullie wij onze";

static const char *const kSwedish =
 "jag är och inte att från till behöver behover får skulle ska vill måste också dessa "
 "detta säger upp utan mitt min om kommer här två tva vi nästa gör göra hjälp hjalp hjälpa "
 "hjalpa mig det den ett en som för med har av på du så när nar vad hur eller "
 "kan kunde varför varfor tack hej snälla snalla "
 "idag igår igar imorgon lösenord losenord faktura fakturan beställning bestallning "
 "kontot inloggning appen fungerar återbetalning aterbetalning";

static const char *const kRomanian =
 "și şi să să este sunt care pentru din dar după până fără ale lui în fost acum vreau "
 "trebuie foarte acest această acesta aceasta aceste mi vă nu eu tu el ea noi voi ei ele "
 " mea mele când unde ce poate avem aveți mulțumesc multumesc "
 "vă rog astăzi mâine";

static const char *const kBangla =
    "ami amar amake amra amader apni apnar apnake tumi tomar tomake tomra tader ota eita oita "
    "ekta ei oi ki keno kivabe kibhabe kothay kokhon kobe koto kintu jodi tahole ar theke "
    "jonno sathe shathe diye niye moddhe kore korte korchi korsi korbo korechi koreche korun "
    "koren hobe hoyeche hocche hoyni chai lagbe parchi parbo peyechi paini dite dilam nai "
    "khub onek ekhon akhon ekhono abar ajke kalke taka bhalo valo kharap somossa shomossa "
    "dhonnobad bhai kichu bolun parben jabe pabo ferot dorkar hoye geche";

static const char *const kAzerbaijani =
    "və ve bir bu üçün ucun ilə ile olan olub var yox yoxdur mən men sən biz siz onlar daha "
    "çox cox hər nə kimi görə gore sonra əgər eger deyil lakin amma ancaq artıq artiq də isə "
    "həm yalnız yalniz mənim menim sizin zəhmət zehmet salam təşəkkür tesekkur lazımdır";

/* Short Swedish support fragments: two or three words specific enough to name the language
 * below the four-word minimum of the general guess. ASCII spellings beside the proper ones. */
static const char *const kShortSwedish =
    "lösenord losenord lösenordet losenordet fakturan betalningen inloggningen glömt glomt "
    "behöver behover återbetalning aterbetalning kvitto kvittot beställningen bestallningen "
    "abonnemanget felmeddelande åtkomst atkomst";

/* Danish and Norwegian share these with Swedish; alone they name no Swedish sentence. */
static const char *const kNordicOverlap =
    "hej ja nej jo tack mig min om kommer får skulle vi det den ett en men";

/* English words that are also a foreign function word: a repeat is evidence only once. */
static const char *const kCollision = "come son do per plus im";

static const char *const *const kLists[STOP_NLANGS] = {
    &kEnglish, &kFrench, &kGerman, &kSpanish, &kPortuguese, &kItalian,
    &kDutch, &kSwedish, &kRomanian, &kBangla, &kAzerbaijani};
const char *const stop_lang_codes[STOP_NLANGS] = {"en", "fr", "de", "es", "pt", "it",
                                                  "nl", "sv", "ro", "bn", "az"};

/* One open-addressing table over every listed word: a language bitmask plus flags. */
typedef struct entry {
  char *word;
  uint32_t len;
  uint32_t langs;
  uint32_t flags;
} entry;

static entry *g_table;
static size_t g_cap;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static entry *slot(const char *w, size_t n, int create) {
  size_t i = (size_t)(hash_bytes(w, n) & (g_cap - 1));
  for (;;) {
    entry *e = &g_table[i];
    if (!e->word) {
      if (!create) return NULL;
      e->word = malloc(n + 1);
      if (!e->word) return NULL;
      memcpy(e->word, w, n);
      e->word[n] = 0;
      e->len = (uint32_t)n;
      return e;
    }
    if (e->len == n && memcmp(e->word, w, n) == 0) return e;
    i = (i + 1) & (g_cap - 1);
  }
}

static void add_words(const char *list, uint32_t lang_bit, uint32_t flag) {
  const char *p = list;
  while (*p) {
    while (*p == ' ') p++;
    const char *s = p;
    while (*p && *p != ' ') p++;
    if (p > s) {
      entry *e = slot(s, (size_t)(p - s), 1);
      if (e) {
        e->langs |= lang_bit;
        e->flags |= flag;
      }
    }
  }
}

static void build(void) {
  g_cap = 4096;
  g_table = calloc(g_cap, sizeof(entry));
  if (!g_table) {
    g_cap = 0;
    return;
  }
  for (int l = 0; l < STOP_NLANGS; l++) add_words(*kLists[l], 1u << l, 0);
  add_words(kShortSwedish, 0, STOP_SHORT_SV);
  add_words(kNordicOverlap, 0, STOP_NORDIC);
  add_words(kCollision, 0, STOP_COLLISION_CAND);
  for (size_t i = 0; i < g_cap; i++) {
    entry *e = &g_table[i];
    if (!e->word) continue;
    int nl = __builtin_popcount(e->langs);
    if (nl > 1 || (e->flags & STOP_NORDIC)) e->flags |= STOP_SHARED;
    if ((e->langs & 1u) && !(e->flags & STOP_SHARED)) e->flags |= STOP_EN_ONLY;
    /* a collision word counts once only when some foreign list actually holds it */
    if ((e->flags & STOP_COLLISION_CAND) && (e->langs & ~1u)) e->flags |= STOP_COLLISION;
  }
}

int stop_lookup(const char *word, size_t n, uint32_t *langs, uint32_t *flags) {
  pthread_once(&g_once, build);
  *langs = 0;
  *flags = 0;
  if (!g_cap) return 0;
  entry *e = slot(word, n, 0);
  if (!e) return 0;
  *langs = e->langs;
  *flags = e->flags;
  return 1;
}
