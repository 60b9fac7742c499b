"""The email corpus for the email-cleaning parity fixtures (library; see gen_email.py).

Emails written for laya.c's tests, not taken from anywhere: for each of twelve languages, a
request in the sender's words, then the parts real mail carries after it -- a closing and a
name, a signature block, a device footer, a confidentiality footer, and the quoted history in
the shape that language's mail clients write it (Gmail attributions, Outlook headers and
banners, `>` quoting, forwarded blocks, HTML). Names, companies, phones and addresses come from
Faker's locale data (seeded). Laya's cleaner knows English, Portuguese, Spanish and French
clients; the other languages show what it leaves alone. `edge_cases()` holds the hand-made
inputs (empty bodies, only quotes, CRLF, long lines, budgets, Unicode corner cases).
"""
import random

import corpus as _corpus  # noqa: F401  (pins Faker's clock)
from faker import Faker

LOCALES = {
    "en": "en_US", "pt": "pt_BR", "es": "es_ES", "fr": "fr_FR", "de": "de_DE", "it": "it_IT",
    "nl": "nl_NL", "pl": "pl_PL", "ru": "ru_RU", "ja": "ja_JP", "zh": "zh_CN", "tr": "tr_TR",
}

# Per language: greetings, request sentences, extra sentences, closings (alone on a line),
# closing sentences (a sentence that starts like a closing), quote attributions, Outlook header
# labels (from, sent, to, subject), banners, device footers, disclaimers.
L = {
    "en": dict(
        greet=["Hi team,", "Hello,", "Dear support,", "Hi {first},", "Good morning,"],
        req=["I was charged twice for my subscription this month and would like one of the payments refunded.",
             "Our API integration has been returning 502 errors since last night's deployment.",
             "Could you send me a quote for 40 additional seats on the enterprise plan?",
             "I can't log in anymore: the password reset email never arrives.",
             "Please cancel my account at the end of the current billing period.",
             "The invoice for October lists the wrong VAT number for our company.",
             "Is this confidential? I need to know before I forward the contract.",
             "From my side the integration works, but please refund the duplicate charge."],
        more=["The order number is {num}.", "This is blocking our release on Friday.",
              "I already tried clearing the cache and reinstalling the app.",
              "Let me know if you need any screenshots.", "We have been customers for six years."],
        closing=["Thanks,", "Best regards,", "Kind regards,", "Regards,", "Cheers,", "Thank you,",
                 "Many thanks,", "Warm regards,", "Sincerely,", "Best,", "Thanks and regards,",
                 "Thanks in advance,", "Warmest wishes,", "Thanks again!"],
        closing_sentence=["Thanks for the quick reply yesterday.", "Thank you for looking into this.",
                          "Thanks a lot for your patience."],
        attrib=["On {date_en}, {name} <{email}> wrote:", "On {date_en} at {time}, {name} wrote:",
                "On {date_en}, {name} <{email}>", "> On {date_en}, {name} wrote:"],
        hdr=("From", "Sent", "To", "Subject"), date_label="Date",
        banner=["-----Original Message-----", "---------- Forwarded message ---------",
                "----- Forwarded Message -----"],
        device=["Sent from my iPhone", "Sent from my Samsung Galaxy smartphone.", "Get Outlook for iOS",
                "Sent from Mail for Windows", "Sent from my iPad", "Sent from Yahoo Mail for Android"],
        disclaimer=["This email and any attachments are confidential and intended solely for the addressee.",
                    "CONFIDENTIALITY NOTICE: This message contains confidential information intended only for the named recipient. If you have received this message in error, please notify the sender and delete it.",
                    "The information in this communication is confidential and may be privileged. Any unauthorized disclosure is prohibited."],
    ),
    "pt": dict(
        greet=["Olá,", "Bom dia,", "Prezados,", "Oi {first},", "Boa tarde, equipe,"],
        req=["Fui cobrado duas vezes na fatura deste mês e gostaria do estorno de uma das cobranças.",
             "O sistema está fora do ar desde ontem à noite e não conseguimos emitir notas fiscais.",
             "Gostaria de um orçamento para mais 15 licenças do plano empresarial.",
             "Não consigo acessar minha conta, o e-mail de recuperação de senha não chega.",
             "Preciso do contrato confidencial assinado até sexta-feira.",
             "Antes de imprimir o boleto, confira o valor: ele veio com juros indevidos.",
             "Obrigado pelo retorno, mas o problema continua acontecendo."],
        more=["O número do pedido é {num}.", "De: 10/09 a 15/09 estarei de férias.",
              "Isso está travando o fechamento do mês.", "Segue em anexo o comprovante."],
        closing=["Atenciosamente,", "Att,", "Abraços,", "Obrigado!", "Muito obrigada,", "Cumprimentos,",
                 "Obrigado desde já.", "Um abraço,", "Abs", "Grato,", "Saudações,"],
        closing_sentence=["Obrigado pela atenção e aguardo retorno sobre o estorno."],
        attrib=["Em {date_pt}, {name} <{email}> escreveu:", "Em {date_pt} às {time}, {name} escreveu:",
                "Em seg., {date_pt}, {name} <{email}>"],
        hdr=("De", "Enviado", "Para", "Assunto"), date_label="Data",
        banner=["-----Mensagem original-----", "---------- Mensagem encaminhada ---------"],
        device=["Enviado do meu iPhone", "Enviado do meu smartphone Samsung Galaxy.", "Obter o Outlook para Android",
                "Enviado pelo meu celular", "Enviado do meu celular o comprovante ontem."],
        disclaimer=["Esta mensagem e seus anexos são confidenciais e de uso exclusivo do destinatário.",
                    "Se você recebeu esta mensagem por engano, por favor apague-a e avise o remetente.",
                    "Antes de imprimir, pense no meio ambiente."],
    ),
    "es": dict(
        greet=["Hola,", "Buenos días,", "Estimados,", "Hola {first},"],
        req=["Me han cobrado dos veces la suscripción de este mes y quisiera la devolución de un cargo.",
             "La aplicación se cierra cada vez que intento subir un archivo desde el móvil.",
             "Necesito una factura rectificativa con el CIF correcto de la empresa.",
             "¿Podrían darme de baja del plan premium a partir del mes que viene?",
             "Gracias por la respuesta, pero el error sigue apareciendo."],
        more=["El número de pedido es {num}.", "Es urgente porque cerramos el trimestre mañana.",
              "Adjunto una captura de pantalla."],
        closing=["Saludos,", "Un saludo,", "Saludos cordiales,", "Atentamente,", "Muchas gracias,",
                 "Gracias de antemano.", "Gracias!"],
        closing_sentence=["Gracias por todo, quedo a la espera de su respuesta."],
        attrib=["El {date_es}, {name} <{email}> escribió:", "El {date_es} a las {time}, {name} escribio:"],
        hdr=("De", "Enviado el", "Para", "Asunto"), date_label="Fecha",
        banner=["-----Mensaje original-----", "---------- Mensaje reenviado ---------"],
        device=["Enviado desde mi iPhone", "Enviado desde mi móvil Android", "Enviado desde mi smartphone Samsung"],
        disclaimer=["Este mensaje es confidencial y está dirigido únicamente a su destinatario.",
                    "Si ha recibido este mensaje por error, por favor elimínelo.",
                    "Antes de imprimir este correo, piense en el medio ambiente."],
    ),
    "fr": dict(
        greet=["Bonjour,", "Bonjour {first},", "Madame, Monsieur,", "Salut l'équipe,"],
        req=["J'ai été débité deux fois ce mois-ci et je souhaite le remboursement d'un des prélèvements.",
             "Depuis la mise à jour, l'application refuse de se connecter au serveur.",
             "Pourriez-vous m'envoyer un devis pour 25 licences supplémentaires ?",
             "Merci pour votre aide, mais le problème n'est toujours pas résolu.",
             "Le rapport que vous avez écrit : il manque les chiffres de mars.",
             "Je dois recevoir le contrat confidentiel avant lundi."],
        more=["Le numéro de commande est {num}.", "C'est assez urgent pour nous.",
              "Je reste disponible par téléphone."],
        closing=["Cordialement,", "Bien cordialement,", "Merci,", "Merci d'avance.", "Bien à vous,",
                 "Salutations distinguées,", "Bonne journée !"],
        closing_sentence=["Merci beaucoup pour votre retour rapide."],
        attrib=["Le {date_fr}, {name} <{email}> a écrit :", "Le {date_fr} à {time}, {name} a écrit :",
                "Le lun. {date_fr}, {name} <{email}>"],
        hdr=("De", "Envoyé", "À", "Objet"), date_label="Date",
        banner=["-----Message d'origine-----"],
        device=["Envoyé depuis mon iPhone", "Envoyé de mon iPad", "Envoyé depuis mon smartphone Samsung Galaxy"],
        disclaimer=["Ce message et ses pièces jointes sont confidentiels et réservés à l'usage exclusif de leur destinataire.",
                    "Si vous avez reçu ce message par erreur, merci de le supprimer."],
    ),
    "de": dict(
        greet=["Hallo,", "Sehr geehrte Damen und Herren,", "Guten Tag {first},"],
        req=["Mir wurde die Rechnung für November doppelt abgebucht, bitte erstatten Sie einen Betrag.",
             "Seit dem letzten Update startet die App auf meinem Tablet nicht mehr.",
             "Können Sie mir ein Angebot für zehn weitere Lizenzen schicken?",
             "Bitte kündigen Sie meinen Vertrag zum nächstmöglichen Termin."],
        more=["Die Bestellnummer lautet {num}.", "Das ist leider dringend."],
        closing=["Viele Grüße,", "Mit freundlichen Grüßen", "Beste Grüße", "LG"],
        closing_sentence=[],
        attrib=["Am {date_de} schrieb {name} <{email}>:", "{name} <{email}> schrieb am {date_de}:"],
        hdr=("Von", "Gesendet", "An", "Betreff"), date_label="Datum",
        banner=["-----Ursprüngliche Nachricht-----", "---------- Weitergeleitete Nachricht ----------"],
        device=["Von meinem iPhone gesendet", "Gesendet von meinem Samsung Galaxy"],
        disclaimer=["Diese E-Mail enthält vertrauliche Informationen und ist ausschließlich für den Adressaten bestimmt.",
                    "This e-mail is confidential and intended solely for the use of the addressee."],
    ),
    "it": dict(
        greet=["Buongiorno,", "Ciao {first},", "Gentili signori,"],
        req=["Mi è stato addebitato due volte l'abbonamento di questo mese, vorrei un rimborso.",
             "Il sito non carica più la pagina dei pagamenti da stamattina.",
             "Potete inviarmi un preventivo per venti utenti in più?"],
        more=["Il numero d'ordine è {num}.", "È piuttosto urgente."],
        closing=["Cordiali saluti,", "Grazie,", "Un saluto,", "Distinti saluti"],
        closing_sentence=[],
        attrib=["Il giorno {date_it} {name} <{email}> ha scritto:", "Il {date_it}, {name} ha scritto:"],
        hdr=("Da", "Inviato", "A", "Oggetto"), date_label="Data",
        banner=["-----Messaggio originale-----"],
        device=["Inviato da iPhone", "Inviato dal mio smartphone Samsung Galaxy"],
        disclaimer=["Questo messaggio è confidenziale ed è destinato esclusivamente al destinatario indicato."],
    ),
    "nl": dict(
        greet=["Hallo,", "Beste {first},", "Geachte heer/mevrouw,"],
        req=["Ik heb deze maand twee keer betaald voor mijn abonnement, kunt u één betaling terugstorten?",
             "De koppeling met ons boekhoudpakket werkt sinds gisteren niet meer.",
             "Graag ontvang ik een offerte voor vijf extra gebruikers."],
        more=["Mijn klantnummer is {num}.", "Het heeft wel haast."],
        closing=["Met vriendelijke groet,", "Groeten,", "Groetjes,", "Bedankt!"],
        closing_sentence=[],
        attrib=["Op {date_nl} schreef {name} <{email}>:", "Op {date_nl} om {time} schreef {name}:"],
        hdr=("Van", "Verzonden", "Aan", "Onderwerp"), date_label="Datum",
        banner=["-----Oorspronkelijk bericht-----"],
        device=["Verzonden vanaf mijn iPhone", "Verstuurd vanaf mijn Samsung Galaxy smartphone"],
        disclaimer=["Dit bericht is vertrouwelijk en uitsluitend bestemd voor de geadresseerde."],
    ),
    "pl": dict(
        greet=["Dzień dobry,", "Witam,", "Cześć {first},"],
        req=["W tym miesiącu pobrano ode mnie opłatę dwa razy, proszę o zwrot jednej z nich.",
             "Od wczoraj nie mogę zalogować się do panelu klienta.",
             "Proszę o ofertę na dodatkowe 12 licencji."],
        more=["Numer zamówienia: {num}.", "Sprawa jest pilna."],
        closing=["Pozdrawiam,", "Z poważaniem,", "Dziękuję,", "Regards, Łukasz", "Thanks, żaneta"],
        closing_sentence=[],
        attrib=["W dniu {date_pl} {name} <{email}> napisał:", "{date_pl} {name} <{email}> napisał(a):"],
        hdr=("Od", "Wysłano", "Do", "Temat"), date_label="Data",
        banner=["-----Oryginalna wiadomość-----"],
        device=["Wysłane z iPhone'a", "Wysłano z mojego smartfona Samsung Galaxy"],
        disclaimer=["Ta wiadomość jest poufna i przeznaczona wyłącznie dla adresata."],
    ),
    "ru": dict(
        greet=["Здравствуйте,", "Добрый день,", "Привет, {first},"],
        req=["С меня дважды списали оплату за подписку в этом месяце, прошу вернуть один платёж.",
             "Приложение перестало синхронизироваться после обновления.",
             "Пришлите, пожалуйста, счёт на 30 дополнительных лицензий."],
        more=["Номер заказа {num}.", "Это срочно, у нас отчётный период."],
        closing=["С уважением,", "Спасибо,", "Всего доброго,", "Regards, Дмитрий"],
        closing_sentence=[],
        attrib=["{date_ru}, {name} <{email}> написал(а):", "On {date_en}, {name} <{email}> wrote:"],
        hdr=("От", "Отправлено", "Кому", "Тема"), date_label="Дата",
        banner=["-------- Исходное сообщение --------", "-------- Пересылаемое сообщение --------"],
        device=["Отправлено с iPhone", "Sent from my iPhone"],
        disclaimer=["Это сообщение является конфиденциальным и предназначено только для адресата."],
    ),
    "ja": dict(
        greet=["お世話になっております。", "{last}様", "サポートご担当者様"],
        req=["今月のサブスクリプション料金が二重に請求されていますので、一件分の返金をお願いします。",
             "昨日からログインできず、パスワード再設定のメールも届きません。",
             "追加で十ライセンスの見積もりをいただけますでしょうか。"],
        more=["注文番号は{num}です。", "至急ご対応いただけると助かります。"],
        closing=["よろしくお願いいたします。", "以上、よろしくお願いします。", "Thanks, 山田"],
        closing_sentence=[],
        attrib=["{date_ja} {name} <{email}>:", "On {date_en}, {name} <{email}> wrote:"],
        hdr=("差出人", "送信日時", "宛先", "件名"), date_label="日付",
        banner=["-----Original Message-----", "-------- 転送メッセージ --------"],
        device=["iPhoneから送信", "Sent from my iPhone"],
        disclaimer=["このメールは機密情報を含み、宛先の方のみを対象としています。"],
    ),
    "zh": dict(
        greet=["您好，", "{last}先生您好，", "客服你好："],
        req=["本月的订阅费用被扣了两次，请退还其中一笔。", "从昨天开始我们的接口一直返回错误。",
             "请给我们发一份增加二十个账号的报价。"],
        more=["订单号是{num}。", "这件事比较急。"],
        closing=["谢谢！", "此致敬礼", "祝好，", "Best regards,"],
        closing_sentence=[],
        attrib=["在 {date_zh}，{name} <{email}> 写道：", "On {date_en}, {name} <{email}> wrote:"],
        hdr=("发件人", "发送时间", "收件人", "主题"), date_label="日期",
        banner=["------------------ 原始邮件 ------------------"],
        device=["发自我的iPhone", "Sent from my iPhone"],
        disclaimer=["本邮件包含保密信息，仅供指定收件人使用。"],
    ),
    "tr": dict(
        greet=["Merhaba,", "İyi günler,", "Sayın yetkili,"],
        req=["Bu ay aboneliğim için iki kez ücret alındı, birinin iadesini rica ediyorum.",
             "Uygulama güncellemeden sonra açılmıyor.", "Ek on kullanıcı için fiyat teklifi alabilir miyim?"],
        more=["Sipariş numaram {num}.", "Konu acildir."],
        closing=["Saygılarımla,", "İyi çalışmalar,", "Teşekkürler,", "SİNCERELY,", "Thanks, İlker"],
        closing_sentence=[],
        attrib=["{date_tr} tarihinde {name} <{email}> şunu yazdı:", "On {date_en}, {name} <{email}> wrote:"],
        hdr=("Kimden", "Gönderildi", "Kime", "Konu"), date_label="Tarih",
        banner=["-----Orijinal Mesaj-----"],
        device=["iPhone'umdan gönderildi", "Sent from my Samsung Galaxy smartphone."],
        disclaimer=["Bu e-posta gizlidir ve yalnızca alıcısına yöneliktir."],
    ),
}

MONTHS = {
    "en": "January February March April May June July August September October November December",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "nl": "januari februari maart april mei juni juli augustus september oktober november december",
    "pl": "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października listopada grudnia",
    "ru": "января февраля марта апреля мая июня июля августа сентября октября ноября декабря",
    "tr": "Ocak Şubat Mart Nisan Mayıs Haziran Temmuz Ağustos Eylül Ekim Kasım Aralık",
}


def _dates(rng):
    y, m, d = rng.choice([2024, 2025, 2026]), rng.randrange(12), rng.randint(1, 28)
    hh, mm = rng.randint(7, 22), rng.randint(0, 59)
    mon = {k: v.split()[m] for k, v in MONTHS.items()}
    return {
        "date_en": "%s, %s %d, %d" % (rng.choice(["Mon", "Tue", "Wed", "Thu", "Fri"]), mon["en"][:3], d, y),
        "date_pt": "%d de %s de %d" % (d, mon["pt"], y),
        "date_es": "%d de %s de %d" % (d, mon["es"], y),
        "date_fr": "%d %s %d" % (d, mon["fr"], y),
        "date_de": "%d. %s %d um %02d:%02d" % (d, mon["de"], y, hh, mm),
        "date_it": "%d %s %d alle ore %02d:%02d" % (d, mon["it"], y, hh, mm),
        "date_nl": "%d %s %d" % (d, mon["nl"], y),
        "date_pl": "%d %s %d" % (d, mon["pl"], y),
        "date_ru": "%d %s %d г., в %02d:%02d" % (d, mon["ru"], y, hh, mm),
        "date_ja": "%d年%d月%d日(月) %d:%02d" % (y, m + 1, d, hh, mm),
        "date_zh": "%d年%d月%d日 %02d:%02d" % (y, m + 1, d, hh, mm),
        "date_tr": "%d %s %d %02d:%02d" % (d, mon["tr"], y, hh, mm),
        "time": "%02d:%02d" % (hh, mm),
        "iso": "%d-%02d-%02d %02d:%02d" % (y, m + 1, d, hh, mm),
    }


def _person(fake):
    first, last = fake.first_name(), fake.last_name()
    return {"first": first, "last": last, "name": "%s %s" % (first, last),
            "email": fake.ascii_email(), "company": fake.company(), "phone": fake.phone_number(),
            "job": fake.job()[:40], "city": fake.city()}


def _fmt(s, ctx):
    return s.format(**ctx)


def _signature_block(rng, lang, p):
    lines = [p["name"]]
    if rng.random() < 0.7:
        lines.append(p["job"])
    if rng.random() < 0.7:
        lines.append(p["company"])
    if rng.random() < 0.6:
        lines.append(rng.choice(["Tel: ", "Phone: ", "T ", "☎ ", ""]) + p["phone"])
    if rng.random() < 0.3:
        lines.append("www.%s.example" % p["last"].lower().replace(" ", ""))
    return lines


def _quoted(rng, lang, spec, ctx, other):
    """The history under a reply, in one of the client formats of the language (or English)."""
    kind = rng.choice(["gmail", "gmail", "outlook", "outlook_noaddr", "banner", "angle", "forward",
                       "wrapped", "underscore"])
    old_req = rng.choice(spec["req"])
    old = [_fmt(rng.choice(spec["greet"]), ctx), "", old_req, "", other["name"]]
    if kind == "gmail":
        head = [_fmt(rng.choice(spec["attrib"]), ctx), ""]
        return head + ["> " + x if x else ">" for x in old]
    if kind == "wrapped":
        a = _fmt(rng.choice(spec["attrib"]), ctx)
        if "<" in a:
            cut = a.index("<")
            return [a[:cut].rstrip(), a[cut:], ""] + ["> " + x for x in old]
        return [a, ""] + ["> " + x for x in old]
    if kind in ("outlook", "outlook_noaddr"):
        f, s, t, subj = spec["hdr"]
        sender = ctx["name"] if kind == "outlook_noaddr" else "%s <%s>" % (ctx["name"], ctx["email"])
        sep = " :" if lang == "fr" and rng.random() < 0.5 else ":"
        head = ["%s%s %s" % (f, sep, sender)]
        if rng.random() < 0.5:
            head.append("%s%s %s" % (s, sep, ctx["date_en"] if lang == "en" else ctx["iso"]))
        else:
            head.append("%s%s %s" % (spec["date_label"], sep, ctx["iso"]))
        head += ["%s%s %s" % (t, sep, other["email"]), "%s%s %s" % (subj, sep, rng.choice(["Re: Invoice", "RE: ticket %d" % rng.randint(1000, 9999), "Pedido"]))]
        if rng.random() < 0.4:
            head = [rng.choice(["", "________________________________"])] + head
        return head + [""] + old
    if kind == "banner":
        return [rng.choice(spec["banner"])] + ["%s: %s" % (spec["hdr"][0], ctx["email"])] + [""] + old
    if kind == "forward":
        b = rng.choice(spec["banner"])
        return ["", b, "%s: %s <%s>" % (spec["hdr"][0], ctx["name"], ctx["email"]),
                "%s: %s" % (spec["date_label"], ctx["iso"]), "%s: Fwd" % spec["hdr"][3], ""] + old
    if kind == "underscore":
        return ["_" * rng.randint(8, 40)] + old
    return [">" + x for x in old]


def _email(rng, lang, fake):
    spec = L[lang]
    me, other = _person(fake), _person(fake)
    ctx = dict(_dates(rng), num="%d-%d" % (rng.randint(100, 999), rng.randint(10000, 99999)), **me)
    ctx_other = dict(ctx, **other)
    lines = []
    if rng.random() < 0.85:
        lines += [_fmt(rng.choice(spec["greet"]), ctx_other), ""]
    body = [rng.choice(spec["req"])]
    for _ in range(rng.randint(0, 3)):
        body.append(_fmt(rng.choice(spec["more"]), ctx))
    if rng.random() < 0.5:
        lines.append(" ".join(body))
    else:
        lines += body
    if spec["closing_sentence"] and rng.random() < 0.25:
        lines += ["", rng.choice(spec["closing_sentence"])]
    tail = []
    r = rng.random()
    if r < 0.55:
        tail += ["", rng.choice(spec["closing"])] + _signature_block(rng, lang, me)
    elif r < 0.7:
        tail += ["", "--"] + _signature_block(rng, lang, me)
    elif r < 0.8:
        tail += ["", me["first"]]
    if rng.random() < 0.3:
        tail += ["", rng.choice(spec["device"])]
    if rng.random() < 0.35:
        d = rng.choice(spec["disclaimer"])
        if rng.random() < 0.3:  # a footer wrapped by the client
            words, out, cur = d.split(" "), [], ""
            for w in words:
                if len(cur) + len(w) > 60:
                    out.append(cur)
                    cur = w
                else:
                    cur = (cur + " " + w).strip()
            out.append(cur)
            d = "\n".join(out)
        tail += ["", d] if rng.random() < 0.8 else [d]
    lines += tail
    if rng.random() < 0.6:
        lines += [""] + _quoted(rng, lang, spec, dict(ctx_other, name=other["name"], email=other["email"]), me)
    text = "\n".join(lines)
    # the transport: line endings, HTML, stray whitespace
    t = rng.random()
    if t < 0.15:
        text = text.replace("\n", "\r\n")
    elif t < 0.2:
        text = text.replace("\n", "\r")
    elif t < 0.25:
        text = text.replace("\n", "\\n")  # a body that went through one JSON encoding too many
    elif t < 0.32:
        text = "<html><body><p>" + text.replace("\n\n", "</p><p>").replace("\n", "<br>\n") + "</p></body></html>"
    if rng.random() < 0.15:
        text = text.replace(" ", rng.choice(["  ", " \t", "\u00a0"]), rng.randint(1, 4))
    if rng.random() < 0.1:
        text = "\n\n  " + text + "\n\n\n"
    subject = rng.choice(["Re: ", "RE: ", "Fwd: ", "TR : ", "", "  "]) + body[0][:50]
    return subject, text, me


def corpus(per_lang=26, seed=20261202):
    """[(id, lang, subject, body, sender)] for every language, deterministic."""
    out = []
    for i, (lang, loc) in enumerate(sorted(LOCALES.items())):
        fake = Faker(loc)
        fake.seed_instance(seed + i)
        rng = random.Random(seed * 31 + i)
        for k in range(per_lang):
            subject, body, me = _email(rng, lang, fake)
            sender = rng.choice([me["email"], "%s <%s>" % (me["name"], me["email"]), None, ""])
            out.append(("%s-%03d" % (lang, k), lang, subject, body, sender))
    return out


def edge_cases():
    """[(id, kwargs for clean_email_body)]: inputs made to hit one rule or corner each."""
    long_line = "The dashboard shows a blank page. " * 500
    cases = [
        ("empty", {"body": ""}), ("none", {"body": None}), ("spaces", {"body": "   \n\t\n  "}),
        ("only-quotes", {"body": "> quoted only\n> and more\n>"}),
        ("only-header", {"body": "On Mon, Jan 5, 2026, Ann <a@x.com> wrote:\n> hi"}),
        ("header-first-kept", {"body": "From: ana@x.com\nplease refund\nFrom: bob@y.com"}),
        ("crlf", {"body": "Hello\r\n\r\nplease help\r\n\r\nThanks,\r\nAnn\r\n"}),
        ("cr-only", {"body": "Hello\r\rplease help\r\rRegards,\rBob"}),
        ("literal-backslash-n", {"body": "Hello\\n\\nI need help\\nThanks,\\nAnn"}),
        ("double-backslash-n", {"body": "path C:\\\\new\\nfolder"}),
        ("long-line", {"body": long_line}),
        ("long-line-budget", {"body": long_line, "max_chars": 100}),
        ("budget-zero", {"body": "Refund my order please.", "max_chars": 0}),
        ("budget-negative", {"body": "Refund my order please. " * 5, "max_chars": -3}),
        ("budget-negative-big", {"body": "Refund my order please.", "max_chars": -1000}),
        ("budget-one", {"body": "éa", "max_chars": 1}),
        ("budget-bool", {"body": "abc", "max_chars": True}),
        ("budget-huge", {"body": "abc\n\nThanks,\nAnn", "max_chars": 10 ** 30}),
        ("budget-precut-hides-footer", {"body": "x" * 50 + "\n\nThis email is confidential and intended solely for you.", "max_chars": 20}),
        ("tabs-spaces", {"body": "a  \t b\t\tc\n\n\n\n d   e"}),
        ("nbsp", {"body": "a\u00a0\u00a0b\n\u3000\nc"}),
        ("u2028", {"body": "line one\u2028line two\n\u2029\npara"}),
        ("emoji", {"body": "Please fix 🙏🏽 asap\n\nThanks,\nZoë 😀"}),
        ("signoff-lowercase-name", {"body": "a\nb\nc\nThanks, żaneta"}),
        ("signoff-capital-name", {"body": "a\nb\nc\nRegards, Łukasz"}),
        ("signoff-combining", {"body": "a\nb\nc\nThanks, Jose\u0301 Lu\u0301cio"}),
        ("signoff-lead-mark", {"body": "a\nb\nc\nThanks, \u0301Ann"}),
        ("signoff-devanagari-zwnj", {"body": "a\nb\nc\nThanks, क्\u200cष"}),
        ("signoff-four-names", {"body": "a\nb\nc\nBest regards, Ann Marie Van Dyke"}),
        ("signoff-exclaim", {"body": "a\nb\nc\nThanks, John!"}),
        ("signoff-sentence", {"body": "a\nb\nc\nThanks for the quick reply."}),
        ("signoff-first-line", {"body": "Thanks,\nAnn"}),
        ("signoff-dotted-i", {"body": "a\nb\nc\nSİNCERELY,\nAnn"}),
        ("signoff-kelvin", {"body": "a\nb\nc\n\u212aind regards,\nAnn"}),
        ("signoff-long-s", {"body": "a\nb\nc\nBe\u017ft,\nAnn"}),
        ("signoff-digit-name", {"body": "a\nb\nc\nThanks, 2Pac"}),
        ("signoff-superscript", {"body": "a\nb\nc\nThanks, ²nd"}),
        ("signoff-titlecase", {"body": "a\nb\nc\nThanks, ǅemal"}),
        ("signoff-cjk", {"body": "a\nb\nc\nThanks, 山田太郎"}),
        ("signoff-41-chars", {"body": "a\nb\nc\nThanks, " + "A" * 33}),
        ("dash-dash", {"body": "a\nb\nc\n -- \nsig"}),
        ("device-61", {"body": "a\nb\nc\nSent from my iPhone " + "1" * 45}),
        ("device-using", {"body": "a\nb\nc\nSent from my Android using K-9.Mail+x"}),
        ("device-kelvin", {"body": "a\nb\nc\nSent from my \u212aindle"}),
        ("device-prose", {"body": "a\nb\nc\nEnviado do meu celular o comprovante ontem."}),
        ("pt-em-no-date", {"body": "Oi\nEm resposta ao que você escreveu:\nmais texto"}),
        ("fr-no-date", {"body": "Bonjour\nLe rapport que vous avez écrit :\nsuite"}),
        ("fr-no-space", {"body": "Bonjour\nLe 3 mars 2026, Ann a écrit:\n> x"}),
        ("from-prose", {"body": "Hi\nFrom: my side the integration works, but please refund.\nThanks"}),
        ("de-leave", {"body": "Olá\nDe: 10/09 a 15/09\nPara: 15/09\nestarei fora"}),
        ("de-name-enviado", {"body": "Olá\nDe: Maria Souza\nEnviado: terça-feira\nold"}),
        ("from-name-date", {"body": "Hi\nFrom: Maria Souza\nDate: Tue, 3 Mar 2026 10:00\nold"}),
        ("from-name-date-noyear", {"body": "Hi\nFrom: Maria Souza\nDate: Tuesday\nold"}),
        ("from-name-last-line", {"body": "Hi\nFrom: Maria Souza"}),
        ("attr-tail-wrapped", {"body": "Hi\nplease help\nOn Tue, Mar 3, 2026 at 10:00 AM Ann Smith <\nann@example.com> wrote:\n> old"}),
        ("attr-tail-no-head", {"body": "Hi\nplease help\nann@example.com> wrote:\n> old"}),
        ("attr-tail-fr", {"body": "Bonjour\naide\nLe mar. 3 mars 2026 à 10:00, Ann <\nann@example.fr> a écrit :\n> old"}),
        ("attr-301", {"body": "hi\nOn " + "x" * 301 + "wrote:\nold"}),
        ("attr-300", {"body": "hi\nOn " + "x" * 300 + "wrote:\nold"}),
        ("disclaimer-question", {"body": "Is this confidential?\n\nConfidential: I need a refund."}),
        ("disclaimer-fused", {"body": "My account is locked\nThis email is confidential and intended solely for the addressee."}),
        ("disclaimer-wrapped", {"body": "Please help.\n\nThis message and its contents are\nconfidential and intended for the recipient only."}),
        ("disclaimer-mixed", {"body": "I need a refund. This email is confidential and intended solely for you. Thanks a lot!"}),
        ("disclaimer-print-request", {"body": "Antes de imprimir o boleto, confira o valor."}),
        ("disclaimer-print-footer", {"body": "Pago.\n\nAntes de imprimir, pense no meio ambiente."}),
        ("disclaimer-word-boundary", {"body": "emailconfidential intended\n\nxmessage is confidential and intended"}),
        ("disclaimer-mark-boundary", {"body": "The message\u0301 is confidential and intended for you."}),
        ("gt-indented", {"body": "hi\n   > quoted\n\t>> more\nend"}),
        ("underscores-7", {"body": "hi\n_______\nmore"}),
        ("underscores-8", {"body": "hi\n________\nmore"}),
        ("html-only", {"body": "<div dir=\"ltr\">Hello<br><br>Please refund order 77.<br><br>Thanks,<br>Ann</div>"}),
        ("turkish-dotless", {"body": "hı\nON Mon, 3 Mar 2026, Ann wrote:\nold"}),
        ("many-lines-window", {"body": "\n".join(["line %d" % i for i in range(30)] + ["Thanks,", "Ann"] + ["tail %d" % i for i in range(10)])}),
        ("window-short", {"body": "\n".join(["Thanks,", "a", "b", "c", "Thanks,", "d"])}),
        ("surrogate", {"body": "abc \ud800 def\n\nThanks,\nAnn"}),
    ]
    return cases


# Pieces that each sit on one rule's edge, for fragment_cases().
FRAGMENTS = [
    "On Mon, 3 Mar 2026, Ann <a@x.com> wrote:", "Em 3 de mar. de 2026, Ana escreveu:",
    "El 3 de marzo de 2026, Ana escribió:", "Le 3 mars 2026, Ann a écrit :", "-----Original Message-----",
    "--- Mensagem encaminhada ---", "________", "From: a@b.c", "De : Marie <m@x.fr>", "De: Maria",
    "Enviado: hoje", "Envoyé le : lundi", "Sent: now", "Date: 3 Mar 2026", "Fecha: 2026", "x@y.com> wrote:",
    "ann@x.fr> a écrit :", "Thanks,", "Best regards, Ann", "Thanks, john", "Regards, Łukasz",
    "Atenciosamente,", "Att", "Un saludo", "Merci d'avance.", "Bien à vous", "--", "Sent from my iPhone",
    "Enviado do meu celular", "Envoyé depuis mon iPad", "Get Outlook for Android",
    "Sent from my Android using Foo.bar", "This email is confidential and intended solely for the addressee.",
    "If you received this message in error, delete it.", "Esta mensagem é confidencial.",
    "Antes de imprimir, pense no meio ambiente.", "Ce message est confidentiel.", "uniquement au destinataire",
    "Please refund me.", "I need help!", "Why? Because.", "> quoted", ">> deep", "", "", "  ", "\t", "ǅemal",
    "İ", "ı", "ſ", "K", "é", "\u0301", "\u00a0", "\u2028", "\u3000", "山田", "²", "A.", "b",
    "CONFIDENTIAL and may be privileged", "thank you so much", "Warmest wishes Ann", "Cheers & regards",
    "enviada desde mi móvil", "Sent from my iPhone 15 Pro Max", "\\n", "\r\n", "\r", "e-mail", "Email",
    "message", "MESSAGE IS CONFIDENTIAL, INTENDED", "\x85", "\x1c", "\x0b", "\x0c", "ÉTÉ", "ÇA", "SAUDAÇÕES",
    "OBRIGADO PELA ATENÇÃO", "ÚNICAMENTE destinatario", "recibió este correo hoy por error",
]
# Characters a mutation may drop in: rule letters' case partners, marks, spaces, digits of
# other scripts, caseless and titlecase letters.
MUTATIONS = list("aeiouAEIOU .,;:!?-_@<>\n\t\r\\") + [
    "\u0301", "\u0130", "\u0131", "\u017f", "\u212a", "\u00a0", "\u2028", "\u01c5", "\u00b2", "\u5c71",
    "\U0001F600", "\u00e9", "\u00c9", "\u0663", "\u203f", "\u0903"]


def fragment_cases(n=800, seed=20261203):
    """[(id, kwargs)]: bodies glued from FRAGMENTS, some mutated, under varied budgets."""
    rng = random.Random(seed)

    def mutate(s):
        s = list(s)
        for _ in range(rng.randint(0, 4)):
            if s:
                s[rng.randrange(len(s))] = rng.choice(MUTATIONS)
        return "".join(s)

    out = []
    for k in range(n):
        parts = []
        for _ in range(rng.randint(0, 25)):
            f = rng.choice(FRAGMENTS)
            if rng.random() < 0.2 and f:
                i = rng.randrange(len(f) + 1)
                f = f[:i] + rng.choice(FRAGMENTS) + f[i:]
            if rng.random() < 0.1:
                f = f.upper()
            elif rng.random() < 0.1:
                f = f.lower()
            parts.append(mutate(f) if rng.random() < 0.5 else f)
        kw = {"body": rng.choice(["\n", "\n", " ", "\n\n", "\r\n", ". ", "\n \n"]).join(parts)}
        if rng.random() < 0.2:
            kw["max_chars"] = rng.choice([0, 1, 5, 30, 100, -2, -20])
        out.append(("frag-%04d" % k, kw))
    return out


def fold_cases():
    """[(id, kwargs)]: the corpus's rule phrases with a letter swapped for a code point Python's
    IGNORECASE matches it with (long s, Kelvin sign, dotless and dotted i), in three positions."""
    subs = [("s", "\u017f"), ("k", "\u212a"), ("i", "\u0131"), ("I", "\u0130"), ("S", "\u017f"), ("K", "\u212a")]
    phrases = [f for f in FRAGMENTS if f.strip()]
    for lang in sorted(L):
        for k in ("disclaimer", "closing", "device", "attrib", "banner"):
            phrases += [x for x in L[lang][k] if "{" not in x]
    out, k = [], 0
    for f in phrases:
        for a, b in subs:
            if a not in f:
                continue
            g = f.replace(a, b)
            for body in ("Hello\nplease help\n\n" + g + "\nmore text", "a\nb\nc\nd\n" + g, "Please refund. " + g):
                out.append(("fold-%04d" % k, {"body": body}))
                k += 1
    return out
