/* Question JSON fragments shared by the engine tests: a choice, a score and a noul question in
 * Laya's request format, to paste into a "questions" object. */
#ifndef LAYA_TESTS_MODEL_QUESTIONS_H
#define LAYA_TESTS_MODEL_QUESTIONS_H

#define TEAM                                                                                     \
  "\"team\": {\"type\": \"choice\", \"instructions\": \"Which team should handle this ticket?\", " \
  "\"criteria\": {\"billing\": \"payments, refunds\", \"technical\": \"bugs, crashes\", "        \
  "\"shipping\": \"parcels\"}}"
#define URGENCY                                                                                  \
  "\"urgency\": {\"type\": \"score\", \"instructions\": \"How urgent is this?\", "                \
  "\"criteria\": [\"can wait\", \"soon\", \"today\", \"right now\"]}"
#define REFUND "\"refund\": {\"type\": \"noul\", \"instructions\": \"Is the customer asking for money back?\"}"

#endif
