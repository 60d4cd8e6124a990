"""Writes the example labelled set (a fictional help centre) from the material below."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIN_WORDS, MAX_WORDS = 60, 200
INTENTS = ("how-to", "troubleshooting", "billing", "account", "navigational", "security")
SEGMENTS = ("free", "business", "enterprise")


@dataclass(frozen=True)
class Article:
    """One help-centre article as written: a lead, optional steps and notes, its plans."""

    slug: str
    title: str
    plans: str
    """`all`, `business`, `enterprise`, or empty for articles about no one feature."""
    lead: str
    steps: tuple[str, ...] = ()
    notes: str = ""
    legacy_of: str | None = None
    """The current article this outdated one duplicates."""
    legacy_grade: int = 0
    """Its grade for a query its current article answers: 0 misleading, 1 partly still true."""


def a(
    slug: str,
    title: str,
    plans: str,
    lead: str,
    steps: str = "",
    notes: str = "",
    legacy: tuple[str, int] | None = None,
) -> Article:
    """An article; `steps` are separated by ` | `."""
    parts = tuple(step.strip() for step in steps.split(" | ") if step.strip())
    of, grade = legacy if legacy else (None, 0)
    return Article(slug, title, plans, lead, parts, notes, of, grade)


# The product: Quillhour, a team invoicing, scheduling and time-tracking app with three plans
# (Free, Business, Enterprise). Everything below was written for this example.
# fmt: off
TOPICS: dict[str, list[Article]] = {}

TOPICS["account"] = [
    a("create-account", "Create a Quillhour account", "all",
      "You can sign up with an email address or with a Google or Microsoft account. Every new "
      "account starts with a workspace of its own, on the Free plan.",
      "Go to the sign-up page and enter your work email. | Type in the six-digit confirmation "
      "code we email you. | Name your workspace and pick its time zone and currency. | Invite "
      "teammates now, or skip this and do it later from Settings > Members.",
      "One email address can belong to several workspaces, so you do not need a second account "
      "to join a client's workspace."),
    a("sign-in", "Sign in to Quillhour", "all",
      "Sign in with the method you used when you created your account: email and password, a "
      "one-time email link, Google, Microsoft, or your company's single sign-on.",
      "Open the sign-in page. | Enter your email address and select Continue. | Choose one of "
      "the sign-in methods offered for your address and finish signing in.",
      "If you belong to several workspaces, you land in the one you used last; the workspace "
      "switcher at the top of the sidebar takes you to the others. Trouble signing in? See Reset "
      "a forgotten password, or Account locked after too many sign-in attempts."),
    a("reset-password", "Reset a forgotten password", "all",
      "If you cannot remember your password, set a new one from the sign-in page. You do not "
      "need to contact support.",
      "On the sign-in page, select Forgot password. | Enter the email address of your account. "
      "| Open the reset email and follow the link; it expires after 60 minutes. | Choose a new "
      "password and sign in.",
      "No email after ten minutes? Check your spam folder and make sure you typed the address "
      "you signed up with. If the link has expired, ask for a new one. If your workspace uses "
      "single sign-on, reset your password with your identity provider instead: Quillhour never "
      "stores it."),
    a("change-password", "Change your password", "all",
      "You can change your password at any time while you are signed in. Changing it signs you "
      "out on every other device.",
      "Select your avatar in the top-right corner and choose Account settings. | Open the "
      "Password tab. | Enter your current password, then the new one twice. | Select Update "
      "password.",
      "If there is no Password tab, your workspace signs in through single sign-on and your "
      "identity provider manages your password."),
    a("password-rules", "Password requirements", "all",
      "Quillhour checks every new password against a few rules so that accounts are hard to "
      "guess.",
      "",
      "A password must be at least 12 characters long and cannot repeat any of your last five "
      "passwords. We also reject passwords that appear in known data breaches; if yours is "
      "refused for that reason, choose a new phrase rather than adding a digit to the old one. "
      "There is no maximum length and no rule about symbols or capital letters, so four or five "
      "unrelated words make a strong password that is easy to remember. Enterprise workspaces "
      "can raise the minimum length in the Admin console."),
    a("change-email", "Change the email address on your account", "all",
      "Your email address is your login and the address your notifications are sent to.",
      "Open Account settings from your avatar menu. | Under Profile, select Change email. | "
      "Enter the new address and your current password. | Confirm the change from the link we "
      "send to the new address. The old address keeps working until you do.",
      "If your company provisions accounts with SCIM, your identity provider sets your email "
      "and you cannot change it here."),
    a("update-profile", "Update your name, photo and job title", "all",
      "Your profile is what teammates see on schedules, timesheets and comments.",
      "Select your avatar and choose Profile. | Edit your display name, job title and phone "
      "number. | Select Upload photo to add a picture; JPG or PNG files up to 5 MB work best. | "
      "Select Save.",
      "The sender name on invoices comes from the workspace's invoice settings, not from your "
      "profile, when an admin has set one."),
    a("language-timezone", "Change your language, time zone and date format", "all",
      "Quillhour shows dates, times and numbers using your personal preferences, which can "
      "differ from the workspace defaults.",
      "Open Account settings and go to Preferences. | Pick a language: English, French, German, "
      "Spanish, Portuguese or Dutch. | Choose your time zone, or turn on Detect automatically. | "
      "Choose a date format and the first day of the week, then save.",
      "Invoices and client emails use the workspace language, which an admin sets under "
      "Settings > Workspace."),
    a("join-leave-workspace", "Join or leave a workspace", "all",
      "You can belong to several workspaces with one account, for example your own and a "
      "client's.",
      "To join, open the invitation email and select Accept, or sign in and accept it from the "
      "banner on your dashboard. | To leave, open Settings > Workspace in the workspace you want "
      "to leave. | Select Leave workspace and confirm.",
      "The last owner of a workspace cannot leave it; transfer ownership first. Your time "
      "entries stay in the workspace after you leave."),
    a("delete-account", "Delete your Quillhour account", "all",
      "Deleting your account removes your profile and personal data and signs you out "
      "everywhere. It cannot be undone.",
      "Open Account settings from your avatar menu. | Scroll to Danger zone and select Delete "
      "account. | Type DELETE and enter your password to confirm.",
      "If you are the only owner of a workspace, transfer ownership or delete the workspace "
      "first. Time entries and invoices you created stay in the workspace and show as created "
      "by a deleted user. To stop paying without deleting anything, cancel the subscription "
      "instead."),
    a("account-locked", "Account locked after too many sign-in attempts", "all",
      "After ten failed sign-in attempts in a row, Quillhour locks the account for 30 minutes "
      "to protect it from password guessing. The sign-in page then says Your account is "
      "temporarily locked.",
      "Wait 30 minutes and try again. | Or select Forgot password and reset it: a successful "
      "reset unlocks the account at once.",
      "If you did not make those attempts yourself, change your password once you are back in "
      "and turn on two-factor authentication. Workspace admins can unlock a member early from "
      "Settings > Members."),
    a("magic-link", "Sign in with a one-time email link", "all",
      "If you would rather not type a password, ask for a sign-in link. It works on the web app "
      "and on the mobile app.",
      "On the sign-in page, enter your email and select Email me a sign-in link. | Open the "
      "email on the same device and select Sign in. | The link works once and expires after "
      "15 minutes.",
      "Links are turned off when your workspace requires single sign-on. If the link opens the "
      "wrong browser, copy it into the browser you want to use."),
    a("social-sign-in", "Sign in with Google or Microsoft", "all",
      "You can connect your Quillhour account to a Google or Microsoft account and sign in with "
      "one click.",
      "Open Account settings and go to Sign-in methods. | Select Connect next to Google or "
      "Microsoft and approve the request. | From then on, choose Continue with Google or "
      "Continue with Microsoft on the sign-in page.",
      "The email of the Google or Microsoft account must match your Quillhour email. "
      "Disconnecting it later keeps your password sign-in working."),
    a("session-timeout", "Why am I signed out automatically?", "all",
      "Quillhour keeps you signed in for 30 days on a trusted device. You are signed out "
      "sooner in a few cases.",
      "",
      "It happens when you change your password or someone resets it, when an admin signs you "
      "out of all sessions, when your workspace has a shorter session length (Enterprise "
      "workspaces can choose anything from one hour to 30 days), or when your browser deletes "
      "cookies as it closes. Private browsing windows always sign you out when they close. If "
      "you are logged out every few minutes, check that your computer's clock is correct and "
      "that no extension blocks cookies."),
    a("delete-workspace", "Delete a workspace", "all",
      "Deleting a workspace permanently removes its clients, projects, schedules, time entries "
      "and invoices for everyone in it. Only an owner can do it.",
      "Export anything you want to keep from Settings > Data. | Cancel the paid subscription, "
      "if there is one. | Open Settings > Workspace and select Delete workspace. | Type the "
      "workspace name to confirm.",
      "We keep a backup for 30 days; contact support within that time if you deleted a "
      "workspace by mistake."),
]

TOPICS["two-factor"] = [
    a("2fa-enable", "Turn on two-factor authentication", "all",
      "Two-factor authentication (2FA) asks for a code from your phone after your password, so "
      "a stolen password alone cannot open your account.",
      "Open Account settings and go to Security. | Select Turn on two-factor authentication. | "
      "Scan the QR code with an authenticator app such as Google Authenticator, Microsoft "
      "Authenticator or 1Password. | Enter the six-digit code from the app. | Save your recovery "
      "codes somewhere safe.",
      "From then on, Quillhour asks for a code when you sign in on a new device."),
    a("2fa-recovery", "Use and regenerate recovery codes", "all",
      "When you turn on two-factor authentication you get ten recovery codes. Each one signs "
      "you in once, in place of a code from your authenticator app.",
      "To use one, select Use a recovery code on the verification screen and type it in. | To "
      "get a fresh set, open Account settings > Security and select Regenerate recovery codes. "
      "| Store the new codes in a password manager or print them.",
      "Regenerating makes all the old codes stop working. Quillhour warns you when you have "
      "fewer than three codes left."),
    a("2fa-lost-phone", "Lost your phone? Sign in without your authenticator app", "all",
      "If you changed or lost the phone with your authenticator app, you can still get into "
      "your account.",
      "On the verification screen, select Use a recovery code and enter one of the codes you "
      "saved. | Once you are in, open Account settings > Security, turn two-factor "
      "authentication off and on again, and scan the new QR code with your new phone.",
      "No recovery codes? Ask a workspace owner or admin to reset your two-factor "
      "authentication from Settings > Members; you set it up again at your next sign-in. If you "
      "are the only owner, contact support from the sign-in page and we will verify your "
      "identity."),
    a("2fa-enforce", "Require two-factor authentication for everyone in a workspace", "business",
      "Owners and admins can make two-factor authentication mandatory for every member of the "
      "workspace.",
      "Go to Settings > Security. | Turn on Require two-factor authentication. | Choose a grace "
      "period of up to 14 days.",
      "Members who have not set it up are asked to at their next sign-in, and once the grace "
      "period ends they cannot use the workspace until they do. The Members page shows who has "
      "2FA turned on. Workspaces that require single sign-on should enforce 2FA in their "
      "identity provider instead."),
    a("2fa-security-keys", "Use a security key or passkey", "all",
      "Besides an authenticator app, Quillhour accepts hardware security keys such as a YubiKey, "
      "and passkeys stored on your phone or laptop.",
      "Open Account settings > Security. | Under Security keys and passkeys, select Add. | "
      "Follow your browser's prompt: touch the key, or confirm with your fingerprint, face or "
      "device PIN. | Give the key a name so you can recognize it later.",
      "You can register up to ten keys. Keep an authenticator app or recovery codes as a backup "
      "in case you lose the key."),
    a("2fa-sms-legacy", "Two-factor authentication by text message (retired)", "all",
      "You can receive your two-factor sign-in code by SMS instead of using an app.",
      "Open My profile > Login security. | Select Enable SMS verification. | Enter your mobile "
      "number and type in the code we text you.",
      "Text messages can take a minute or two to arrive. If no code comes, check that the "
      "number includes your country code, then select Resend code. You can change the number "
      "later from the same page.",
      legacy=("2fa-enable", 0)),
    a("2fa-codes-rejected", "Two-factor codes are not accepted", "all",
      "If Quillhour says Invalid verification code even though you typed the code from your "
      "app, the clock on your phone is usually the cause: codes change every 30 seconds and "
      "depend on the exact time.",
      "Turn on automatic date and time in your phone's settings. | In Google Authenticator on "
      "Android, use Settings > Time correction for codes > Sync now. | Wait for a fresh code and "
      "type it before it changes.",
      "Make sure you read the entry for the right account if your app holds several Quillhour "
      "codes. Still stuck? Use a recovery code."),
]

TOPICS["sso"] = [
    a("sso-overview", "Single sign-on (SAML) overview", "enterprise",
      "Single sign-on lets your team sign in to Quillhour through your company's identity "
      "provider, so people use one company password and lose access automatically when IT "
      "removes them.",
      "",
      "Quillhour supports SAML 2.0 with any identity provider and has step-by-step guides for "
      "Okta, Microsoft Entra ID and Google Workspace. Setup takes about 15 minutes and needs a "
      "workspace owner in Quillhour and an administrator of your identity provider. Before you "
      "start, verify your company domain. After setup you can require single sign-on for "
      "everyone, create accounts on first sign-in with just-in-time provisioning, or sync users "
      "and groups with SCIM."),
    a("sso-okta", "Set up single sign-on with Okta", "enterprise",
      "Connect Okta to Quillhour with SAML so your team signs in with their Okta accounts.",
      "In Quillhour, open the Admin console > Authentication, select Add SAML connection and "
      "copy the ACS URL and Entity ID. | In Okta, add the Quillhour app from the Okta "
      "Integration Network, or create a SAML 2.0 app with the values you copied. | Set the Name "
      "ID format to EmailAddress. | Paste the Okta metadata URL into Quillhour and select Test "
      "connection. | Assign people or groups to the app in Okta.",
      "Only assigned users can sign in; others see error SSO-05."),
    a("sso-entra", "Set up single sign-on with Microsoft Entra ID (Azure AD)", "enterprise",
      "Use Microsoft Entra ID, formerly Azure Active Directory, as the identity provider for "
      "Quillhour.",
      "In the Entra admin center, go to Enterprise applications > New application and search "
      "for Quillhour. | Open Single sign-on, choose SAML and paste the ACS URL and Entity ID "
      "from the Quillhour Admin console. | Download the Federation Metadata XML. | Upload the "
      "file in the Admin console > Authentication and select Test connection. | Assign users "
      "and groups in Entra.",
      "Entra sends the user principal name by default; if it differs from people's email "
      "addresses, map the email claim to user.mail."),
    a("sso-google", "Set up single sign-on with Google Workspace", "enterprise",
      "If your company uses Google Workspace, people can sign in to Quillhour with their Google "
      "accounts through SAML.",
      "In the Google Admin console, go to Apps > Web and mobile apps and add a custom SAML app "
      "named Quillhour. | Download the IdP metadata. | Enter the ACS URL and Entity ID from the "
      "Quillhour Admin console and choose Primary email as the Name ID. | Upload the metadata "
      "in Quillhour and test the connection. | Turn the app on for the organizational units "
      "that need it.",
      "Changes in Google can take up to 24 hours to reach every user."),
    a("sso-enforce", "Require single sign-on for all members", "enterprise",
      "Once SAML works, you can stop members from signing in with a password, a Google account "
      "or a one-time link.",
      "Open the Admin console > Authentication. | Turn on Require single sign-on. | Choose "
      "which owners may keep a password as a break-glass account in case your identity "
      "provider is down.",
      "Guests and client users outside your verified domain are not affected. Members who are "
      "signed in stay signed in until their session ends, and then have to sign in through "
      "your identity provider."),
    a("scim", "Provision users automatically with SCIM", "enterprise",
      "SCIM keeps Quillhour in step with your identity provider: people you assign there get a "
      "Quillhour account, changes to names and emails are copied over, and people you remove "
      "are deactivated.",
      "In the Admin console, open Provisioning and select Generate SCIM token. | In Okta or "
      "Entra ID, turn on provisioning for the Quillhour app and paste the SCIM base URL and "
      "token. | Choose which attributes to sync and map groups to Quillhour teams.",
      "Deactivated members stop counting as seats at once. Their time entries and invoices are "
      "kept."),
    a("sso-jit", "Just-in-time user provisioning", "enterprise",
      "With just-in-time provisioning, anyone your identity provider allows can sign in to "
      "Quillhour without an invitation; their account is created on first sign-in.",
      "Open the Admin console > Authentication and edit your SAML connection. | Turn on "
      "Just-in-time provisioning. | Pick the default role for new members, usually Member.",
      "Every new member takes a seat, so watch your seat count. SCIM gives you more control, "
      "such as deactivating people automatically when they leave."),
    a("sso-legacy", "Configure SAML single sign-on (legacy security settings)", "enterprise",
      "Workspaces can let members sign in with a SAML identity provider from the Security "
      "settings page.",
      "Go to Settings > Security > SAML. | Paste your identity provider's SSO URL and upload "
      "its X.509 certificate. | Select Enable SAML and sign out to test it.",
      "Only one identity provider can be connected. Members who sign in with SAML keep their "
      "password as well, and certificates uploaded here must be replaced by hand before they "
      "expire.",
      legacy=("sso-overview", 0)),
]

TOPICS["billing"] = [
    a("plans", "Compare the Free, Business and Enterprise plans", "",
      "Quillhour has three plans, and you can change plans at any time from Settings > "
      "Billing.",
      "",
      "Free is for up to three people and includes time tracking, scheduling and five invoices "
      "a month. Business costs 12 USD per seat per month on annual billing, or 15 USD monthly, "
      "and adds unlimited invoices, recurring invoices, online payments, integrations, "
      "timesheet approvals and 2FA enforcement. Enterprise is priced per contract and adds "
      "single sign-on, SCIM, the audit log, data residency, custom roles, an uptime SLA and a "
      "named account manager."),
    a("upgrade", "Upgrade to a paid plan", "all",
      "Upgrade when you need more than three members, unlimited invoices or integrations. Only "
      "workspace owners and billing admins can change the plan.",
      "Open Settings > Billing. | Select Upgrade and choose Business, monthly or annual. | Enter "
      "a card, or pay with PayPal. | Confirm. The new features are available at once.",
      "You pay a prorated amount for the rest of the current period. To move to Enterprise, "
      "select Talk to sales instead."),
    a("downgrade", "Downgrade to the Free plan", "business",
      "If you no longer need paid features, switch back to Free at the end of your billing "
      "period.",
      "Open Settings > Billing and select Change plan. | Choose Free and review what you will "
      "lose. | Confirm the downgrade.",
      "Free allows three members, so deactivate extra members first. Recurring invoices pause "
      "and integrations disconnect when the period ends; your data stays. Downgrading does not "
      "give a refund for unused time."),
    a("cancel", "Cancel your subscription", "business",
      "Cancelling stops future payments. Your workspace keeps its paid features until the end "
      "of the period you have paid for, then moves to the Free plan.",
      "Open Settings > Billing. | Select Cancel subscription at the bottom of the page. | Tell "
      "us why you are leaving, if you like, and confirm.",
      "You receive a confirmation email, and you can undo the cancellation from the same page "
      "until the period ends. Cancelling does not delete data; to remove everything, delete the "
      "workspace as well. Annual plans are not refunded pro rata, except as described in our "
      "refund policy."),
    a("cancel-legacy", "Cancel your plan (subscriptions started before 2023)", "business",
      "Subscriptions bought before the 2023 pricing change are managed from the account pages.",
      "Go to My account > Subscription. | Select Stop auto-renewal. | Email billing support "
      "to confirm the cancellation within 48 hours.",
      "These older plans were called Solo, Team and Company. Cancelling takes effect on the "
      "next renewal date, and the workspace is then closed unless you choose a new plan.",
      legacy=("cancel", 0)),
    a("refund-policy", "Refund policy", "",
      "We want you to be happy with Quillhour, so we refund subscription charges in these cases.",
      "",
      "Monthly subscriptions can be refunded within 7 days of a charge if the workspace has not "
      "been used since. Annual subscriptions can be refunded in full within 30 days of the "
      "first payment or a renewal. We always refund charges caused by errors on our side, such "
      "as duplicate payments. We do not refund partial months, unused seats or downgrades. "
      "Refunds go back to the original payment method and take 5 to 10 business days to "
      "appear, and the tax is refunded with the charge."),
    a("refund-request", "Request a refund", "business",
      "If a charge qualifies under our refund policy, ask for the refund from the billing page; "
      "there is no need to email us.",
      "Open Settings > Billing > Billing history. | Find the charge and select Request refund. "
      "| Choose a reason and add a note for our billing team. | Submit. We reply within two "
      "business days.",
      "Only owners and billing admins can request refunds. If the button is missing, the charge "
      "is older than the refund window; contact support if you think it is a mistake."),
    a("billing-cycle", "Switch between monthly and annual billing", "business",
      "Annual billing costs the same as ten months of monthly billing, and you can switch in "
      "either direction.",
      "Open Settings > Billing and select Change billing cycle. | Pick Annual or Monthly. | "
      "Review the amount and confirm.",
      "Moving to annual charges the prorated yearly price today. Moving to monthly takes effect "
      "when the current annual term ends, so you are never charged twice for the same time."),
    a("payment-method", "Update your payment card", "business",
      "Add a new card before the old one expires to avoid a failed payment.",
      "Open Settings > Billing. | Under Payment method, select Replace. | Enter the card "
      "details, or choose PayPal, and save. | Remove the old card if you wish.",
      "Some banks ask you to confirm the new card in their app. We store cards with our payment "
      "processor and never see the full number."),
    a("failed-payment", "What happens when a payment fails", "business",
      "If we cannot charge your card, we email the workspace owner and billing contacts and try "
      "again after 3, 5 and 7 days.",
      "",
      "Meanwhile the workspace works as usual and a banner asks admins to update the payment "
      "method. If every retry fails, the workspace becomes read-only: members can view and "
      "export data but cannot add time, shifts or invoices. Update the card in Settings > "
      "Billing and select Retry payment to restore full access at once. If the decline code is "
      "PAY-02 or PAY-07, see the error articles for the likely cause."),
    a("receipts", "Download receipts for your Quillhour subscription", "business",
      "Every payment for your Quillhour plan comes with a receipt and a tax invoice that you "
      "can download at any time. These are the invoices we send you, not the invoices you send "
      "your clients.",
      "Open Settings > Billing > Billing history. | Select a payment to view it. | Select "
      "Download PDF, or select Download all to get a ZIP file of everything from the past 24 "
      "months.",
      "To change the company name or address on future billing documents, edit Billing details "
      "on the same page."),
    a("billing-contact", "Send billing emails to your finance team", "business",
      "Receipts, renewal reminders and payment failure notices go to the workspace owner. You "
      "can add other addresses, such as your accounts payable mailbox.",
      "Open Settings > Billing > Billing details. | Under Billing contacts, add up to five email "
      "addresses. | Save.",
      "Billing contacts do not need a Quillhour account and do not take a seat. To let a "
      "colleague manage the plan itself, give them the Billing admin role instead."),
    a("subscription-tax-id", "Add your VAT or tax ID to your subscription", "business",
      "Add your company's VAT number, GST number or other tax ID so that it appears on the "
      "invoices for your Quillhour plan.",
      "Open Settings > Billing > Billing details. | Select Add tax ID and pick the country and "
      "type. | Enter the number and save.",
      "For businesses in the EU and UK, a valid VAT number means we apply the reverse charge and "
      "do not add VAT. We check the number with the official registry; if it is rejected, check "
      "the country prefix. The change applies to future invoices only."),
    a("sales-tax-charged", "Why was I charged sales tax or VAT?", "",
      "Quillhour has to collect sales tax, VAT or GST in many countries and US states, based on "
      "the billing address of your subscription.",
      "",
      "The tax appears as a separate line on your receipt. If your business is registered for "
      "VAT in the EU or UK, add your VAT number and future charges will not include VAT. US "
      "customers who are exempt can send a resale or exemption certificate to billing support. "
      "We cannot refund tax on past payments unless the charge itself is refunded."),
    a("seats", "How seats are counted and billed", "",
      "On the Business and Enterprise plans you pay for each seat, and every active member uses "
      "one.",
      "",
      "Owners, admins, managers and members each take a seat. Guests and client users who only "
      "view their invoices are free, and deactivated members do not count. When you invite "
      "someone, a seat is added and you pay a prorated amount for the rest of the billing "
      "period. When you remove someone, the seat stays paid until the period ends and is then "
      "dropped. The Billing page shows the seats in use and the seats paid for."),
    a("add-seats", "Add or remove seats", "business",
      "Seats are added automatically when you invite members, but you can also buy seats in "
      "advance, for example before a new team starts.",
      "Open Settings > Billing and find Seats. | Select Change seats and enter the new number. "
      "| Review the prorated charge or credit and confirm.",
      "You cannot reduce seats below the number of active members. Removed seats become a "
      "credit on your next invoice rather than a refund."),
    a("free-trial", "Free trial of the Business plan", "all",
      "New workspaces can try Business for 14 days, with no card needed.",
      "Open Settings > Billing and select Start free trial. | Invite your team and try "
      "invoicing, approvals and integrations. | Before the trial ends, add a card to stay on "
      "Business.",
      "If you do nothing, the workspace returns to the Free plan when the trial ends and nothing "
      "is charged. Each workspace gets one trial. Enterprise trials are arranged with our sales "
      "team."),
    a("nonprofit-discount", "Discounts for nonprofits and schools", "",
      "Registered nonprofits, charities and schools get 50 percent off the Business plan.",
      "Create a workspace and start a Business trial. | Fill in the discount request form in "
      "Settings > Billing > Discounts and upload proof of your status. | Once approved, the "
      "discount applies from your next charge.",
      "Approval takes up to five business days. The discount cannot be combined with other "
      "offers and is checked every year."),
    a("pay-by-invoice", "Pay by bank transfer or purchase order", "enterprise",
      "Enterprise customers can pay for Quillhour by bank transfer against an invoice instead "
      "of by card.",
      "",
      "Ask your account manager to switch your billing to invoicing. We send an invoice at the "
      "start of each term with payment terms of 30 days, and can include your purchase order "
      "number. Our bank details appear on every invoice. Payments by cheque are not accepted. "
      "If an invoice is more than 30 days overdue, we email your billing contacts before any "
      "change to your service."),
    a("billing-currency", "Change your billing currency", "business",
      "You can pay for Quillhour in USD, EUR, GBP, CAD or AUD.",
      "Open Settings > Billing > Billing details. | Select Change currency. | Pick a currency "
      "and confirm.",
      "The change applies from your next renewal, at the prices listed for that currency rather "
      "than the exchange rate of the day. This is the currency you pay us in; the currency of "
      "the invoices you send your clients is set per client."),
]

TOPICS["invoices"] = [
    a("invoice-create", "Create and send an invoice", "all",
      "Invoices in Quillhour are built from line items: tracked time, expenses, fixed amounts "
      "or products.",
      "Go to Invoices and select New invoice. | Choose the client; their currency, address and "
      "payment terms fill in automatically. | Add line items, or select Import time and "
      "expenses. | Check the due date, tax and notes, then select Send. Quillhour emails the "
      "client a link to the invoice and a PDF copy.",
      "Free workspaces can send five invoices a month. Drafts are saved automatically."),
    a("invoice-from-time", "Invoice tracked time and expenses", "all",
      "Turn billable hours and expenses into invoice lines without typing them again.",
      "Create an invoice for a client, then select Import time and expenses. | Pick the "
      "projects and the date range. | Choose how to group lines: by project, by task, by person "
      "or one line per entry. | Select Import.",
      "Imported entries are marked as invoiced so you cannot bill them twice; deleting the "
      "invoice or removing the line releases them. Only billable entries are imported. The "
      "hourly rate comes from the project or the person, whichever is set."),
    a("invoice-recurring", "Set up recurring invoices", "business",
      "For retainers and subscriptions, Quillhour can create and send the same invoice on a "
      "schedule.",
      "Create an invoice as usual. | Instead of Send, select Make recurring. | Choose how often "
      "(weekly, monthly, quarterly or yearly), the first date and when to stop. | Choose "
      "whether each invoice is sent automatically or saved as a draft for you to review.",
      "Recurring invoices appear under Invoices > Recurring, where you can pause or edit them. "
      "Changes apply to future invoices only."),
    a("invoice-branding", "Add your logo and colors to invoices", "all",
      "Make invoices and estimates look like your business.",
      "Open Settings > Invoices > Appearance. | Upload your logo (PNG or SVG, at least 400 "
      "pixels wide). | Pick a brand color and one of four layouts. | Add a footer with your "
      "bank details or registration number, then select Preview.",
      "Removing the Sent with Quillhour badge from the footer needs a Business plan. The same "
      "design is used for the email, the online invoice page and the PDF."),
    a("invoice-reminders", "Send automatic payment reminders", "business",
      "Quillhour can chase late payers for you with polite reminder emails.",
      "Open Settings > Invoices > Reminders. | Turn on the reminders you want: before the due "
      "date, on it, and 7, 14 or 30 days after. | Edit the wording of each email. | Save.",
      "Reminders stop when the invoice is paid or marked as paid. You can turn them off for one "
      "client on the client's page, or for one invoice from its menu."),
    a("invoice-mark-paid", "Record a payment on an invoice", "all",
      "Payments made online are recorded automatically. When a client pays by bank transfer, "
      "cash or cheque, record the payment yourself.",
      "Open the invoice and select Record payment. | Enter the amount, date and method. | "
      "Select Save. An invoice paid in full changes to Paid; a smaller amount leaves it "
      "Partially paid with the balance due.",
      "To undo a payment recorded by mistake, open the payment on the invoice and select "
      "Delete. Paid invoices can send the client a thank-you receipt."),
    a("invoice-deposits", "Ask for a deposit or partial payment", "business",
      "For larger jobs you can ask for part of the total up front.",
      "On an invoice or estimate, select More > Request deposit. | Enter a percentage or an "
      "amount. | Send it. The client pays the deposit online or by transfer, and the rest stays "
      "due.",
      "The deposit shows as a payment on the final invoice. Clients can also pay any amount "
      "they like if you turn on Allow partial payments in the invoice's payment settings."),
    a("credit-notes", "Issue a credit note", "business",
      "A credit note reduces what a client owes without deleting the original invoice, which "
      "many tax authorities require.",
      "Open the paid or sent invoice and select More > Create credit note. | Choose the lines "
      "and amounts to credit. | Send the credit note. | Apply the credit to a future invoice, "
      "or record a refund to the client.",
      "Credit notes have their own numbering sequence, set in Settings > Invoices > Numbering."),
    a("invoice-void", "Void or delete an invoice", "all",
      "Draft invoices can be deleted. Invoices that have been sent should be voided instead, so "
      "that your numbering has no gaps.",
      "Open the invoice. | For a draft, select More > Delete. | For a sent invoice, select More "
      "> Void and give a reason.",
      "A void invoice stays in your list, marked Void, and is left out of reports. Its time "
      "entries become uninvoiced again. An invoice with payments cannot be voided until the "
      "payments are deleted or refunded."),
    a("invoice-numbering", "Change invoice numbering", "all",
      "Quillhour numbers invoices one after another, starting at 0001. You can change the "
      "prefix and the next number.",
      "Open Settings > Invoices > Numbering. | Set a prefix, such as INV- or the year. | Enter "
      "the next number. | Save.",
      "Numbers must be unique, so Quillhour will not let you reuse a number that is already "
      "taken. Estimates and credit notes have separate sequences."),
    a("invoice-currency", "Invoice clients in another currency", "all",
      "Each client has a currency, and their invoices use it. Quillhour supports more than 130 "
      "currencies.",
      "Open Clients and select the client. | Select Edit and change Currency. | New invoices "
      "for that client use the new currency.",
      "Reports convert amounts to your workspace currency at the exchange rate on the invoice "
      "date, and you can override the rate on an invoice. Online card payments are charged in "
      "the invoice currency."),
    a("invoice-export", "Export invoices", "all",
      "You can export invoices as a spreadsheet for your accountant, or download the PDFs in "
      "bulk.",
      "Go to Invoices and filter the list by date, client or status. | Select Export. | Choose "
      "CSV, Excel or a ZIP of PDFs. | The file downloads at once, or is emailed to you if it "
      "holds more than 500 invoices.",
      "The CSV has one row per invoice with the number, client, dates, totals, tax, amount paid "
      "and status; choose Line items for one row per line. To send invoices to your "
      "accounting software automatically, connect QuickBooks or Xero."),
    a("invoice-export-legacy", "Exporting invoices (legacy editor)", "all",
      "If you use the legacy invoice editor, invoice exports are made from the Reports area.",
      "Go to Reports > Invoice report. | Set the date range and select Download CSV. | For "
      "PDFs, open each invoice and select Print.",
      "The CSV lists one row per invoice with its number, client, date and total. Bulk PDF "
      "downloads and Excel files are not available for invoices made in the legacy editor.",
      legacy=("invoice-export", 0)),
    a("invoice-online-payments", "Let clients pay invoices online", "business",
      "Add a Pay now button to your invoices so clients can pay by card, Apple Pay, Google Pay "
      "or bank debit.",
      "Connect Stripe or PayPal under Settings > Integrations. | Open Settings > Invoices > "
      "Payments and choose the methods to offer. | Send an invoice: the client sees Pay now on "
      "the invoice page.",
      "Payments are recorded on the invoice automatically and the money goes to your Stripe or "
      "PayPal account, minus their fees. You can pass the card fee on to the client as a "
      "surcharge where the law allows it."),
    a("late-fees", "Add late fees to overdue invoices", "business",
      "Quillhour can add a fee to invoices that are not paid on time.",
      "Open Settings > Invoices > Late fees. | Choose a fixed amount or a percentage of the "
      "balance. | Choose when the fee is added, for example 7 days after the due date, and "
      "whether it repeats monthly. | Save.",
      "The fee appears as a separate line and the client gets an email about it. Check local "
      "law before you charge late fees; some places limit them."),
    a("estimates", "Create an estimate and turn it into an invoice", "all",
      "Send an estimate, also called a quote, before the work starts. When the client accepts, "
      "turn it into an invoice in one step.",
      "Go to Invoices > Estimates and select New estimate. | Add lines and send it; the client "
      "can accept or decline online. | When it is accepted, open it and select Convert to "
      "invoice.",
      "You can turn an estimate into a project too, with the estimate lines as its budget."),
    a("invoice-create-legacy", "Create an invoice (legacy editor)", "all",
      "In the legacy invoice editor, invoices are created from the Billing tab.",
      "Go to Billing > Invoices > Add invoice. | Pick a client and type each line, with a "
      "description, quantity and price. | Select a tax rate for each line if needed. | Select "
      "Save and email to send it to the client.",
      "Time entries cannot be imported into legacy invoices, and the legacy editor does not "
      "support estimates or online payments.",
      legacy=("invoice-create", 1)),
    a("invoice-client-view", "What your client sees when you send an invoice", "all",
      "Clients do not need a Quillhour account to view or pay an invoice.",
      "",
      "The invoice email contains a secure link and a PDF attachment. The link opens the "
      "invoice page, where the client can download the PDF, pay online if you have turned that "
      "on, and see earlier invoices from you. You are notified when the client opens the page. "
      "The email comes from Quillhour on your behalf, with your name as the sender and your "
      "email as the reply-to address."),
    a("invoice-edit-sent", "Edit an invoice after sending it", "all",
      "You can change a sent invoice as long as no payment has been recorded on it.",
      "Open the invoice and select Edit. | Make your changes and select Save. | Choose whether "
      "to send the updated invoice to the client again.",
      "The invoice page always shows the latest version, and the history at the bottom lists "
      "every change. If the invoice has a payment, create a credit note for the difference "
      "instead. Some countries do not allow changes to issued invoices at all."),
    a("invoice-pdf", "Download or print an invoice as a PDF", "all",
      "Every invoice can be downloaded as a PDF, for your records or to send through another "
      "channel.",
      "Open the invoice. | Select Download PDF, or Print to send it to a printer. | To "
      "download many at once, use Export on the invoice list.",
      "PDFs use your invoice design and the client's language, and paid invoices get a Paid "
      "stamp."),
]

TOPICS["taxes"] = [
    a("tax-rates", "Set up tax rates for invoices", "all",
      "Add the sales taxes you charge once, then pick them on invoice lines.",
      "Open Settings > Invoices > Taxes and select Add tax. | Enter a name, such as VAT or GST, "
      "and the rate. | Add your tax registration number if it should print on invoices. | "
      "Choose whether the tax is applied to new lines by default.",
      "Changing a rate affects new invoices only. You can set a different default tax for each "
      "client."),
    a("tax-compound", "Apply two taxes to one invoice", "all",
      "Some regions charge two taxes, such as GST and PST in parts of Canada. Quillhour lets "
      "you add a second tax to any line.",
      "Set up both taxes in Settings > Invoices > Taxes. | On an invoice line, pick the first "
      "tax, then select Add second tax. | To calculate the second tax on the amount including "
      "the first, turn on Compound for it.",
      "Totals for each tax are shown separately at the bottom of the invoice and in the tax "
      "report."),
    a("tax-inclusive", "Prices that include tax", "all",
      "By default, prices on invoice lines are before tax and the tax is added to the total. "
      "If your prices already include tax, switch the invoice to tax-inclusive.",
      "Open the invoice and select More > Amounts are. | Choose Tax inclusive. | To make this "
      "the default, set it in Settings > Invoices > Taxes.",
      "Quillhour then works out the tax contained in each price. The total stays the same and "
      "the tax is shown as included."),
    a("tax-reverse-charge", "EU and UK reverse charge VAT on invoices", "all",
      "When you invoice a VAT-registered business in another EU country, the customer accounts "
      "for the VAT and you charge none. This is called the reverse charge.",
      "Add the client's VAT number on their client page. | Create a tax rate of 0 percent named "
      "Reverse charge. | Use it on the client's invoices; Quillhour adds the required note, VAT "
      "reverse charged to the customer.",
      "Your own VAT number must be set in Settings > Invoices > Taxes. Ask your accountant which "
      "rules apply to you."),
    a("tax-report", "Run a sales tax report", "business",
      "The tax report shows how much tax you charged and collected, for your tax returns.",
      "Go to Reports > Tax. | Choose the period and whether to report on an invoice basis or a "
      "payment basis. | Export to CSV or Excel if your accountant needs it.",
      "Amounts in other currencies are converted at the rate on the invoice. Void invoices are "
      "left out, and credit notes reduce the tax of the period they were issued in."),
]

TOPICS["scheduling"] = [
    a("schedule-create", "Build your team's schedule", "all",
      "The Schedule page shows who works when. Managers add shifts; everyone else sees their "
      "own shifts and the published schedule.",
      "Open Schedule from the sidebar and pick Week or Month view. | Select an empty cell next "
      "to a person to add a shift. | Set the start and end time, break, location and role. | "
      "Repeat for the rest of the week, then select Publish.",
      "Shifts stay in draft, visible only to managers, until they are published. Drag a shift "
      "to move it to another day or person."),
    a("shifts-recurring", "Create repeating shifts", "all",
      "For people who work the same hours every week, create a repeating shift instead of "
      "adding it again each week.",
      "Create a shift as usual. | Under Repeat, choose daily, weekly, every two weeks or a "
      "custom pattern. | Set an end date, or leave it open. | Save.",
      "When you edit one shift in the series, Quillhour asks whether to change only that shift "
      "or all the following ones. Repeating shifts are created up to 12 weeks ahead."),
    a("shift-swap", "Swap or give away a shift", "business",
      "Team members can trade shifts with each other, with a manager's approval.",
      "Open the shift in the mobile app or on the Schedule page. | Select Swap to trade it for "
      "a colleague's shift, or Offer to give it to anyone qualified. | The colleague accepts. | "
      "A manager approves, unless your workspace allows swaps without approval.",
      "Until the swap is approved, the original person is still responsible for the shift. "
      "Managers set the rules under Settings > Scheduling > Swaps."),
    a("time-off-request", "Request time off", "all",
      "Ask for vacation, sick leave or other time off from the Schedule page or the mobile app.",
      "Open Schedule and select Time off > New request. | Choose the type of leave, the dates "
      "and whether it is a full or partial day. | Add a note for your manager and submit.",
      "You get a notification when your request is approved or declined. Approved time off "
      "stops you from being scheduled and counts against your balance, if your workspace "
      "tracks balances."),
    a("time-off-approve", "Approve or decline time-off requests", "business",
      "Managers and admins see pending requests on the Schedule page and in their "
      "notifications.",
      "Open Schedule > Time off > Pending. | Check the calendar for overlapping absences. | "
      "Select Approve or Decline, and add a comment if you like.",
      "Approving a request that overlaps existing shifts turns those shifts into open shifts. "
      "Admins can set leave balances and accrual rules in Settings > Scheduling > Time off."),
    a("availability", "Set your availability", "all",
      "Tell your managers when you can and cannot work, so they schedule you at the right "
      "times.",
      "Open your profile and go to Availability. | Mark the hours you are available or "
      "unavailable on each day of the week. | Add exceptions for single dates. | Save.",
      "Managers see a warning when they schedule you outside your availability. Availability "
      "is a preference, not time off: for days you need off, request time off."),
    a("schedule-templates", "Save and reuse schedule templates", "business",
      "If your weeks look alike, save a week as a template and apply it whenever you build a "
      "new schedule.",
      "Build a week the way you want it. | Select More > Save as template and give it a name. "
      "| On another week, select Apply template and choose it.",
      "Templates keep roles, locations and times. You can apply them with or without the "
      "people assigned, and edit or delete them under Schedule > Templates."),
    a("schedule-publish", "Publish the schedule and notify your team", "all",
      "Shifts you add are drafts until you publish them. Publishing makes them visible and "
      "tells each person about their shifts.",
      "Open Schedule and check the week. | Select Publish. | Choose whether to notify everyone "
      "or only people whose shifts changed, and add a message if needed.",
      "Changes to published shifts are marked with a dot until you publish again. People get "
      "notifications by email, push or both, depending on their settings."),
    a("open-shifts", "Post open shifts for anyone to claim", "business",
      "An open shift has no one assigned. Qualified team members can claim it from the app.",
      "Create a shift and leave the person empty, or select Make open on an existing shift. | "
      "Choose who may claim it: everyone, a team or people with a certain role. | Publish. | "
      "Decide whether claims need your approval.",
      "Open shifts appear in a separate row at the top of the schedule."),
    a("booking-page", "Let clients book appointments online", "business",
      "A booking page lets clients pick a time for a meeting or service from your free slots.",
      "Open Schedule > Booking pages and select New booking page. | Add the services you offer "
      "with their length and price. | Choose the people who take bookings and their bookable "
      "hours. | Share the link or embed the page on your website.",
      "Bookings appear in the schedule and in connected calendars. You can ask clients to pay "
      "when they book if Stripe is connected."),
    a("appointment-reminders", "Appointment reminders for clients", "business",
      "Quillhour sends clients reminders before appointments to reduce no-shows.",
      "Open the booking page and go to Notifications. | Choose when reminders go out, for "
      "example 24 hours and 1 hour before. | Edit the message. | Turn on text message "
      "reminders if you want them as well as email.",
      "Text message reminders are charged per message on top of your plan. Clients can "
      "confirm, cancel or reschedule from the reminder."),
    a("booking-buffers", "Add buffer time between appointments", "business",
      "Buffers stop appointments from being booked back to back, giving you time to travel or "
      "prepare.",
      "Open the booking page and select a service. | Set Buffer before and Buffer after, in "
      "minutes. | If you like, set a minimum notice, such as no bookings less than 4 hours "
      "ahead, and a daily limit.",
      "Buffers only affect what clients can book; you can still add appointments yourself at "
      "any time."),
    a("schedule-timezones", "Schedules across time zones", "all",
      "Shifts are stored in the time zone of their location and shown in each viewer's own "
      "time zone.",
      "",
      "When a manager in London schedules a shift for a location in New York, the shift is set "
      "in New York time. Each team member sees shift times in their personal time zone, which "
      "they can change in Account settings > Preferences. Booking pages show clients times in "
      "the time zone of their browser. If a shift looks one hour off, check the location's time "
      "zone under Settings > Locations."),
    a("overtime", "Overtime rules and warnings", "business",
      "Quillhour warns you when a schedule would put someone into overtime, and can calculate "
      "overtime on timesheets.",
      "Open Settings > Scheduling > Overtime. | Set the daily and weekly limits, for example 8 "
      "hours a day or 40 hours a week. | Choose the overtime rate for timesheets and payroll "
      "exports. | Save.",
      "Overtime warnings appear as an orange clock on shifts. Limits can differ for each "
      "location or contract type."),
    a("schedule-conflicts", "Why does a shift show a conflict warning?", "all",
      "A red warning on a shift means something about it clashes. Hover over the icon to see "
      "which rule it breaks.",
      "",
      "Common conflicts are: the person already has a shift at that time; the shift falls in "
      "approved time off; it is outside their availability; the gap since their last shift is "
      "shorter than the minimum rest time; or it would take them past an overtime limit. You "
      "can publish a schedule with warnings, but the person is told about the conflict. Admins "
      "can turn each check on or off in Settings > Scheduling."),
    a("schedule-copy-week", "Copy a week's schedule", "all",
      "Save time by copying the shifts from an earlier week instead of starting from scratch.",
      "Open Schedule in Week view and go to the week you want to fill. | Select More > Copy "
      "from week. | Pick the source week and choose whether to include the people assigned. | "
      "Select Copy.",
      "Copied shifts are drafts; publish them when ready. Shifts that would clash with approved "
      "time off are created as open shifts."),
    a("appointment-reschedule", "Cancel or reschedule an appointment", "business",
      "Both you and your client can move or cancel a booking.",
      "Open the appointment in the schedule. | Select Reschedule to pick a new time, or Cancel "
      "and add a reason. | The client gets an email with the change.",
      "Clients can do the same from the link in their confirmation email, up to the "
      "cancellation notice you set on the booking page. Paid bookings are refunded according "
      "to your cancellation settings."),
    a("booking-page-legacy", "Booking links (classic scheduler)", "business",
      "In the classic scheduler, each person has a personal booking link that clients can use "
      "to pick a time.",
      "Go to My calendar > Booking link. | Set your available hours for each weekday. | Copy "
      "the link and send it to clients.",
      "Each classic booking link offers one service with a fixed length of 30 or 60 minutes. "
      "Bookings are emailed to you and added to My calendar.",
      legacy=("booking-page", 0)),
    a("schedule-visibility", "Choose who can see the schedule", "business",
      "By default, members see the whole published schedule. You can limit this.",
      "Open Settings > Scheduling > Visibility. | Choose Everyone sees the full schedule, "
      "Members see their team only, or Members see only their own shifts. | Save.",
      "Managers always see the schedules of the teams they manage. Draft shifts are never "
      "shown to members."),
]

TOPICS["time"] = [
    a("timer", "Track time with the timer", "all",
      "Start a timer when you begin work and stop it when you finish; Quillhour records the "
      "time against a project and task.",
      "Select Start timer at the top of any page, or press T. | Pick the project and task, and "
      "add a note. | Select Stop when you are done. The entry appears on your timesheet.",
      "The timer keeps running if you close the browser, and you can stop it from the mobile "
      "app or the desktop app. Only one timer runs at a time; starting another stops the "
      "first."),
    a("manual-time", "Add time manually", "all",
      "Forgot to start the timer? Add the time afterwards.",
      "Open Time and select the day. | Select Add entry. | Enter start and end times, or just a "
      "duration such as 1:30 or 1.5h. | Choose the project and task, then save.",
      "In Week view you can type hours straight into the grid. Entries in a submitted or "
      "approved timesheet cannot be edited."),
    a("timesheet-approval", "Submit and approve timesheets", "business",
      "With approvals turned on, members submit their week's time and a manager approves it "
      "before it can be invoiced or exported to payroll.",
      "Members open Time, check the week and select Submit for approval. | Managers open Time "
      "> Approvals, review each timesheet and select Approve, or Reject with a comment. | "
      "Admins turn approvals on in Settings > Time tracking.",
      "Rejected timesheets go back to the member for changes. Approved time is locked."),
    a("billable-time", "Billable and non-billable time", "all",
      "Every time entry is either billable, meaning you can invoice it, or non-billable, such "
      "as internal meetings.",
      "",
      "Whether new entries are billable is set on the project and can be changed for each "
      "task. You can switch a single entry from its menu. Only billable entries can be "
      "imported into invoices, and reports show billable and non-billable hours separately, "
      "so you can see how much of your team's time earns money."),
    a("time-rounding", "Round time entries", "business",
      "Rounding makes invoices and reports tidier, for example by rounding every entry up to "
      "the next 15 minutes.",
      "Open Settings > Time tracking > Rounding. | Choose the interval: 5, 6, 10, 15 or 30 "
      "minutes. | Choose up, down or to the nearest interval. | Choose whether rounding "
      "applies to invoices, reports or both.",
      "Rounding never changes the original entries; it is applied when totals are calculated."),
    a("locked-timesheets", "Edit a locked timesheet", "business",
      "Timesheets lock once approved, or after a lock date set by an admin, so that invoiced "
      "and paid hours do not change.",
      "If you need to change locked time, ask a manager to reopen the timesheet from Time > "
      "Approvals. | Make your changes and submit again.",
      "Admins can set an automatic lock, for example at the end of each month, in Settings > "
      "Time tracking > Locking. Time that has already been invoiced stays locked until the "
      "invoice is voided."),
    a("idle-detection", "Idle time detection in the desktop app", "all",
      "The Quillhour desktop app for Windows and macOS notices when you step away with a timer "
      "running.",
      "Install the desktop app and sign in. | Open Preferences > Timer and turn on Idle "
      "detection. | Choose after how many minutes without keyboard or mouse activity to ask. | "
      "When you return, choose to keep, discard or split off the idle time.",
      "Idle detection works only in the desktop app, not in the browser. It does not take "
      "screenshots or record what you do."),
    a("hourly-rates", "Set hourly rates for people and projects", "all",
      "Rates decide how much tracked time is worth on invoices and in reports.",
      "Open Settings > Members, select a person and set their default billable rate and cost "
      "rate. | To charge a client a different rate, open the project and set a project rate or "
      "a rate per person. | Save.",
      "A project rate overrides the person's default rate. Rate changes apply to new time only, "
      "unless you choose to update past uninvoiced entries."),
    a("timesheet-reminders", "Remind people to fill in their timesheets", "business",
      "Automatic reminders nudge team members who have not logged enough time.",
      "Open Settings > Time tracking > Reminders. | Choose the day and time, for example "
      "Friday at 4 pm. | Set the minimum hours for the week. | Choose email, push or Slack.",
      "Only people below the minimum get the reminder. Managers can also send a one-off "
      "reminder from the Team report."),
    a("expenses", "Log expenses and receipts", "all",
      "Record project costs such as travel or materials, so you can bill them to clients.",
      "Open Time > Expenses and select New expense. | Enter the amount, date, category and "
      "project. | Attach a photo or PDF of the receipt. | Mark it billable if the client should "
      "pay for it.",
      "Billable expenses can be imported into invoices together with your time. Use the mobile "
      "app to snap a receipt and create the expense in one step."),
]

TOPICS["notifications"] = [
    a("notif-email", "Choose which emails Quillhour sends you", "all",
      "You decide which events send you an email.",
      "Open Account settings > Notifications. | In the Email column, turn each event on or off: "
      "shift changes, time-off decisions, approvals, invoice payments, mentions and more. | "
      "Changes save automatically.",
      "Some emails cannot be turned off, such as password resets, security alerts and billing "
      "notices for owners. Settings are per workspace; switch workspace to change them in "
      "another."),
    a("notif-push", "Push notifications on your phone", "all",
      "The mobile app can alert you to new shifts, approvals and payments.",
      "Allow notifications when the app asks, or turn them on in your phone's settings under "
      "Quillhour. | In the app, open More > Notifications. | Choose which events send a push "
      "notification.",
      "If you are signed in on several phones, each one gets the notification. Push "
      "notifications are not sent while you are active in the web app."),
    a("notif-slack", "Get Quillhour notifications in Slack", "business",
      "Send notifications to Slack direct messages or to a channel, for example posting every "
      "paid invoice in a finance channel.",
      "Connect Slack in Settings > Integrations. | For personal notifications, open Account "
      "settings > Notifications and turn on the Slack column. | For a channel, open Settings > "
      "Integrations > Slack > Channel alerts and pick the events and channel.",
      "Slack notifications use the same events as email. Private channels need the Quillhour "
      "app to be invited first."),
    a("notif-digest", "Daily and weekly digest emails", "all",
      "Instead of an email for every event, get one summary a day or a week.",
      "Open Account settings > Notifications. | Under Digest, choose Daily or Weekly and the "
      "time it arrives. | Turn off the individual emails you no longer need.",
      "The weekly digest for managers includes hours logged, pending approvals and overdue "
      "invoices. Owners also get a monthly summary of revenue and seats."),
    a("notif-not-arriving", "Not receiving notification emails", "all",
      "If emails from Quillhour do not arrive, work through these checks.",
      "Look in your spam, junk and promotions folders, and mark our email as not spam. | In "
      "Account settings > Notifications, check that the event is turned on. | Check the email "
      "address on your profile. | Ask your IT team to allow mail from Quillhour's sending "
      "domain.",
      "If an address bounced in the past, we stop sending to it; the Notifications page then "
      "shows a warning and a Resume emails button."),
    a("notif-invoice-viewed", "Know when a client opens or pays an invoice", "all",
      "Quillhour tracks when clients view invoices and tells you.",
      "",
      "On the invoice list, an eye icon marks invoices the client has opened, with the date and "
      "time. Turn on the Invoice viewed and Payment received notifications in Account settings "
      "> Notifications to get an email, push or Slack message. A view is recorded when the "
      "client opens the invoice page; opening the PDF attached to the email is not tracked."),
    a("notif-schedule-changes", "Notifications about your shifts", "all",
      "Team members are told when a published schedule changes.",
      "",
      "You get a notification when you are given a new shift, when one of your shifts is moved "
      "or deleted, when someone accepts your swap, and before each shift if shift reminders are "
      "on. Choose email, push or both in Account settings > Notifications. Managers are also "
      "notified about unfilled open shifts and about people who have not clocked in."),
    a("notif-marketing", "Unsubscribe from product news and marketing email", "all",
      "Product announcements, webinars and tips are sent separately from account "
      "notifications.",
      "Select Unsubscribe at the bottom of any marketing email. | Or open Account settings > "
      "Notifications > Product news and turn it off.",
      "Unsubscribing does not stop notifications about your shifts, invoices or account, and "
      "it can take up to two days for the last scheduled newsletter to stop."),
    a("notif-workspace-defaults", "Set default notifications for the workspace", "business",
      "Admins can choose the notification settings that new members start with.",
      "Open Settings > Notifications. | Turn each event on or off for email, push and Slack. | "
      "Select Apply to new members, or Apply to everyone to overwrite current settings.",
      "Members can still change their own settings afterwards, unless you lock an event so "
      "that it always reaches everyone."),
]

TOPICS["mobile"] = [
    a("mobile-install", "Get the Quillhour mobile app", "all",
      "The Quillhour app for iPhone and Android lets you track time, see your schedule, clock "
      "in and send invoices on the go.",
      "Search for Quillhour in the App Store or Google Play, or scan the QR code in Account "
      "settings > Apps. | Install the app and open it. | Sign in with the same method you use "
      "on the web.",
      "The app is free on every plan. Some features, such as GPS clock-in, depend on your "
      "workspace's settings."),
    a("mobile-sign-in", "Sign in on the mobile app", "all",
      "Use the same email and sign-in method as on the web app.",
      "Open the app and enter your email. | Sign in with your password, Google, Microsoft or "
      "single sign-on. | Or, on the web, open Account settings > Apps > Sign in on a phone and "
      "scan the QR code with the app.",
      "If your workspace requires single sign-on, the app opens your identity provider's page "
      "in the browser and returns to the app when you are done."),
    a("mobile-offline", "Use the mobile app offline", "all",
      "You can keep working without a connection. The app saves your changes and syncs them "
      "when you are back online.",
      "",
      "Offline, you can start and stop timers, add time entries and expenses, view your "
      "schedule for the next two weeks and clock in and out. Creating invoices, approving "
      "timesheets and swapping shifts need a connection. A cloud icon with a line through it "
      "shows that you are offline, and a number on it shows changes waiting to sync. If the "
      "same entry was changed on another device, the most recent change wins."),
    a("mobile-clock-in", "Clock in and out from your phone", "all",
      "If your workspace uses the time clock, clock in at the start of your shift from the "
      "app.",
      "Open the app and select Clock in on the Today screen. | Pick the shift or job if you are "
      "asked to. | Take breaks with Start break and End break. | Select Clock out when you "
      "finish.",
      "Your manager may require you to be at the work location or to take a photo when "
      "clocking in. Forgot to clock out? Ask your manager to correct the entry."),
    a("mobile-gps", "Location tracking when clocking in", "business",
      "Admins can require team members to be at the work site to clock in, using the phone's "
      "location.",
      "Open Settings > Time clock > Locations. | Add each location's address and a radius, for "
      "example 150 meters. | Turn on Require location to clock in.",
      "Quillhour records the location only at the moment of clocking in and out, never in "
      "between. Team members must allow location access for the app. People outside the "
      "radius can still clock in if you allow it, but the entry is flagged."),
    a("mobile-receipts", "Scan receipts with your phone camera", "all",
      "Take a photo of a receipt and Quillhour reads the amount, date and merchant for you.",
      "In the app, open Expenses and select the camera button. | Take a photo of the receipt, "
      "or pick one from your photos. | Check the amount, date and category that were read, and "
      "choose a project. | Save.",
      "Scanning works best in good light with the whole receipt in view. The photo is attached "
      "to the expense."),
    a("mobile-invoices", "Create and send invoices from the app", "all",
      "You can invoice clients without a computer.",
      "Open the app and go to Invoices. | Select the plus button and choose a client. | Add "
      "lines or import time, then select Send.",
      "The app uses the same templates, numbering and taxes as the web app. Advanced options "
      "such as recurring invoices and late fees are only available on the web, and so is "
      "converting an estimate."),
    a("mobile-crash", "The mobile app crashes or will not open", "all",
      "If the app closes by itself or is stuck on the loading screen, try these steps in order.",
      "Update the app to the latest version from the App Store or Google Play. | Restart your "
      "phone. | Check that your phone runs a supported system version. | Sign out and back in "
      "from More > Sign out. | Delete and reinstall the app.",
      "Unsynced offline changes are lost if you reinstall, so connect to the internet first and "
      "wait for the sync. If the problem continues, send us a report from More > Help > Report "
      "a problem."),
    a("mobile-requirements", "Supported phones and operating systems", "",
      "The Quillhour app supports iOS 16 or later on iPhone and iPad, and Android 10 or later "
      "on phones and tablets.",
      "",
      "We support the current and two previous major versions of each system. Older versions "
      "may still install the app but stop getting updates. The desktop app runs on Windows 10 "
      "and 11 and on the three latest versions of macOS. The app needs about 150 MB of storage "
      "and works on Wi-Fi or mobile data. Chromebooks can use the Android app, but we recommend "
      "the web app."),
]

TOPICS["integrations"] = [
    a("integrations-overview", "Integrations: what connects to Quillhour", "",
      "Quillhour connects to the tools your team already uses. Owners and admins set "
      "integrations up in Settings > Integrations.",
      "",
      "Calendars: Google Calendar and Outlook. Accounting: QuickBooks Online and Xero. "
      "Payments: Stripe and PayPal. Chat: Slack. Sales: Salesforce. Project tracking: Jira. "
      "Payroll: Gusto. Automation: Zapier, which reaches thousands more apps. Developers can "
      "build their own with the API and webhooks. Most integrations need a Business or "
      "Enterprise plan; the calendar and Slack integrations also work on Free."),
    a("int-google-calendar", "Sync with Google Calendar", "all",
      "Two-way sync shows your Quillhour shifts and appointments in Google Calendar, and blocks "
      "booking slots when you are busy in Google.",
      "Open Account settings > Calendars and select Connect Google Calendar. | Sign in to "
      "Google and allow access. | Choose the calendar that Quillhour writes to and the "
      "calendars it checks for busy times. | Select Save.",
      "Changes appear within five minutes. Private event details are never copied; Quillhour "
      "only reads whether you are busy. If syncing stops, see error SYNC-11."),
    a("int-google-calendar-legacy", "Google Calendar sync (old version)", "all",
      "The calendar feed lets you see your Quillhour shifts in Google Calendar.",
      "Open My schedule > Export. | Copy the iCal feed address. | In Google Calendar, choose "
      "Other calendars > From URL and paste it.",
      "The feed is read-only and Google refreshes it every 12 to 24 hours, so new shifts can "
      "take a day to appear. It does not include appointments and cannot block booking slots.",
      legacy=("int-google-calendar", 1)),
    a("int-outlook", "Sync with Outlook calendar", "all",
      "Connect Microsoft Outlook or Microsoft 365 to see shifts and appointments next to your "
      "meetings.",
      "Open Account settings > Calendars and select Connect Outlook. | Sign in with your "
      "Microsoft work or personal account and approve access. | Pick the calendar to write to "
      "and the calendars to check for conflicts.",
      "If your company blocks third-party apps, your Microsoft 365 admin has to approve "
      "Quillhour first. On-premises Exchange servers are not supported."),
    a("int-quickbooks", "Connect QuickBooks Online", "business",
      "Send invoices, payments and clients from Quillhour to QuickBooks Online, so your books "
      "stay up to date without double entry.",
      "Open Settings > Integrations > QuickBooks and select Connect. | Sign in to QuickBooks "
      "and choose the company. | Map Quillhour tax rates and items to QuickBooks accounts. | "
      "Choose whether to sync from today or also past invoices.",
      "Sync runs every 30 minutes and after each invoice is sent. QuickBooks Desktop is not "
      "supported. If a sync fails you see error SYNC-14."),
    a("int-xero", "Connect Xero", "business",
      "The Xero integration copies invoices, credit notes, payments and contacts to Xero.",
      "Open Settings > Integrations > Xero and select Connect. | Log in to Xero and pick the "
      "organisation. | Choose the sales account and tax rates for each Quillhour tax. | Turn on "
      "Sync payments if you also want payments recorded in Xero.",
      "Edits made in Xero are not copied back to Quillhour; make changes in Quillhour and they "
      "sync across."),
    a("int-stripe", "Accept payments with Stripe", "business",
      "Connect a Stripe account to accept card payments, Apple Pay, Google Pay and bank debits "
      "on invoices and booking pages.",
      "Open Settings > Integrations > Stripe and select Connect. | Sign in to Stripe, or create "
      "an account, and authorize Quillhour. | Choose the payment methods to offer on invoices.",
      "Money goes straight to your Stripe balance, and Quillhour takes no extra fee. Refunds "
      "made in Stripe are recorded on the invoice automatically."),
    a("int-paypal", "Accept payments with PayPal", "business",
      "Let clients pay invoices with their PayPal balance, or by card through PayPal.",
      "Open Settings > Integrations > PayPal and select Connect. | Sign in to your PayPal "
      "business account and grant access. | Turn on PayPal in Settings > Invoices > Payments.",
      "PayPal payments are marked on the invoice when PayPal confirms them, usually within a "
      "minute. Personal PayPal accounts cannot receive invoice payments."),
    a("int-zapier", "Automate workflows with Zapier", "business",
      "Zapier connects Quillhour to thousands of other apps without code.",
      "In Zapier, create a Zap and search for Quillhour. | Pick a trigger, such as New invoice "
      "paid or New time entry, or an action, such as Create client. | Sign in to Quillhour to "
      "connect your workspace. | Test and turn on the Zap.",
      "Zaps run with the permissions of the person who connected them. For anything Zapier "
      "cannot do, use the API."),
    a("int-salesforce", "Connect Salesforce", "enterprise",
      "Create Quillhour clients and projects from won Salesforce opportunities, and see "
      "invoices on Salesforce accounts.",
      "Open Settings > Integrations > Salesforce and select Connect. | Sign in as a Salesforce "
      "administrator. | Choose which opportunity stage creates a project. | Map Salesforce "
      "account fields to Quillhour client fields.",
      "Invoice totals and payment status appear on the Salesforce account in a Quillhour "
      "panel."),
    a("int-jira", "Track time on Jira issues", "business",
      "Start a Quillhour timer from any Jira issue, and see logged time in both tools.",
      "Install the Quillhour app from the Atlassian Marketplace. | Connect it to your workspace "
      "in Settings > Integrations > Jira. | Map Jira projects to Quillhour projects. | On an "
      "issue, select Start timer in the Quillhour panel.",
      "Time is written back to the issue's work log if you allow it. Jira Cloud is supported; "
      "Jira Data Center is not."),
    a("int-gusto", "Send hours to Gusto payroll", "business",
      "Export approved hours, overtime and time off to Gusto for payroll.",
      "Open Settings > Integrations > Gusto and select Connect. | Match Quillhour members to "
      "Gusto employees. | At the end of each pay period, open Reports > Payroll and select Send "
      "to Gusto.",
      "Only approved timesheets are sent, and hours are split into regular time, overtime and "
      "paid time off. Gusto is available for workspaces in the United States."),
    a("int-slack", "Install the Quillhour app for Slack", "all",
      "With the Slack app, your team can start timers, check schedules and get notifications "
      "without leaving Slack.",
      "Open Settings > Integrations > Slack and select Add to Slack. | Approve the permissions "
      "for your Slack workspace. | Each member links their account the first time they use the "
      "app.",
      "Type /quillhour start to start a timer, /quillhour stop to stop it and /quillhour shifts "
      "to see your next shifts."),
    a("int-disconnect", "Disconnect an integration", "all",
      "Disconnecting stops the sync; data that was already copied stays in both tools.",
      "Open Settings > Integrations. | Select the integration and choose Disconnect. | Confirm.",
      "Calendars are connected per person, so disconnect them in Account settings > Calendars "
      "instead. To remove Quillhour's access completely, also revoke it in the other tool, for "
      "example in your Google account's security settings or your Stripe dashboard."),
]

TOPICS["api"] = [
    a("api-overview", "Getting started with the Quillhour API", "business",
      "The REST API gives programmatic access to clients, projects, time entries, shifts and "
      "invoices.",
      "",
      "Requests go to the API base URL shown in Settings > Developer, use JSON, and are "
      "authenticated with an API key sent as a bearer token in the Authorization header. Every "
      "response includes a request ID that support can use to trace a call. The reference "
      "documentation lists every endpoint, with examples in curl, Python and JavaScript. Start "
      "by creating an API key, then call the current user endpoint to check that it works."),
    a("api-keys", "Create and manage API keys", "business",
      "API keys let scripts and other systems use the API on behalf of your workspace.",
      "Open Settings > Developer > API keys. | Select Create key, name it and choose its "
      "scopes, such as read-only time entries. | Copy the key now: it is shown only once. | To "
      "revoke a key, select Delete next to it.",
      "Keys belong to the workspace, not to a person, so they keep working when the person who "
      "made them leaves. Treat keys like passwords and never put them in code you share."),
    a("api-keys-legacy", "API tokens for API v1 (deprecated)", "business",
      "API v1 uses a personal API token tied to your user, which gives scripts the same access "
      "as you have.",
      "Open My profile > API token. | Select Show token and copy it. | Pass it as the "
      "api_token query parameter on every request.",
      "Each user has one token; select Reset token to replace it if it leaks. Tokens stop "
      "working when their user is removed from the workspace.",
      legacy=("api-keys", 0)),
    a("api-oauth", "Build an OAuth app", "business",
      "If you are building an integration for other Quillhour customers, use OAuth 2.0 instead "
      "of API keys.",
      "Open Settings > Developer > OAuth apps and select New app. | Enter the name, logo and "
      "redirect URLs. | Choose the scopes your app needs. | Use the client ID and secret with "
      "the authorization code flow.",
      "Access tokens last one hour and refresh tokens 90 days. Apps used by more than one "
      "workspace are reviewed before they are listed in our integration directory."),
    a("api-rate-limits", "API rate limits", "business",
      "To keep Quillhour fast for everyone, the API limits how many requests you can make.",
      "",
      "Each API key may make 100 requests per minute on Business and 600 per minute on "
      "Enterprise, with short bursts up to twice that. Every response carries the headers "
      "X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset. Over the limit, the API "
      "answers with HTTP status 429 and error QH-429, and a Retry-After header says how many "
      "seconds to wait. Use bulk endpoints and webhooks instead of polling to stay within the "
      "limit."),
    a("webhooks", "Set up webhooks", "business",
      "Webhooks push events to your server as they happen, such as an invoice being paid or a "
      "shift being published.",
      "Open Settings > Developer > Webhooks and select Add endpoint. | Enter an HTTPS URL on "
      "your server. | Choose the events to subscribe to. | Copy the signing secret and use it "
      "to verify each delivery. | Select Send test event.",
      "Each delivery is a POST request with a JSON body. Reply with any 2xx status within 10 "
      "seconds."),
    a("webhook-signature", "Verify webhook signatures", "business",
      "Each webhook request includes a signature so that you can check it really came from "
      "Quillhour.",
      "Read the Quillhour-Signature header, which holds a timestamp and an HMAC SHA-256 "
      "signature. | Compute the HMAC of the timestamp, a period and the raw request body, using "
      "your endpoint's signing secret. | Compare it with the signature using a constant-time "
      "comparison. | Reject requests whose timestamp is more than five minutes old.",
      "Verify the raw body before parsing the JSON; reformatting it changes the signature."),
    a("webhook-retries", "Webhook delivery and retries", "business",
      "If your endpoint does not answer with a 2xx status within 10 seconds, Quillhour retries "
      "the delivery.",
      "",
      "Retries happen with growing gaps over 24 hours: after 1 minute, 5 minutes, 30 minutes, "
      "2 hours, 6 hours and 24 hours. After the last failure the event is marked as failed and "
      "you can resend it from the endpoint's delivery log. If an endpoint fails for three days "
      "in a row we disable it and email the workspace admins. Deliveries can arrive more than "
      "once or out of order, so use the event ID to ignore duplicates."),
    a("webhook-events", "Webhook event types", "business",
      "You can subscribe to these events when you add a webhook endpoint.",
      "",
      "invoice.created, invoice.sent, invoice.viewed, invoice.paid and invoice.voided; "
      "payment.received and payment.refunded; client.created and client.updated; "
      "time_entry.created, time_entry.updated and time_entry.deleted; timesheet.submitted and "
      "timesheet.approved; shift.published, shift.updated and shift.swapped; "
      "time_off.requested and time_off.approved; member.added and member.removed. Each event "
      "body holds the event type, the time it happened and the full object after the change."),
    a("api-pagination", "Pagination and filtering in the API", "business",
      "List endpoints return results one page at a time.",
      "",
      "Pages hold 50 items by default and up to 200 with the limit parameter. Each response "
      "includes a next_cursor value; pass it as the cursor parameter to get the next page, and "
      "stop when it is empty. Filter with query parameters such as updated_since, client_id or "
      "status, and sort with sort=created_at, or sort=-created_at for newest first. Use "
      "updated_since to fetch only what changed since your last sync."),
    a("api-versioning", "API versions and deprecation policy", "business",
      "The API version is part of the URL, for example v2. We add fields and endpoints to a "
      "version without notice, but never remove or rename them.",
      "",
      "Breaking changes only come in a new version. When we release one, the previous version "
      "keeps working for at least 12 months, and we email the owners of keys that still use "
      "it. Responses from a deprecated version carry a Sunset header with the shutdown date. "
      "API v1 and its personal tokens were switched off in June 2024; move to v2 and workspace "
      "API keys."),
    a("api-sandbox", "Test against a sandbox workspace", "enterprise",
      "A sandbox is a separate copy of your workspace for testing integrations and API scripts "
      "without touching real data.",
      "Open the Admin console > Sandboxes and select Create sandbox. | Choose whether to copy "
      "settings only, or settings and data. | Create API keys in the sandbox as usual.",
      "Sandboxes never send emails to clients or charge cards; online payments run in test "
      "mode. A sandbox can be refreshed from production once a week."),
]

TOPICS["data"] = [
    a("export-all", "Export all your workspace data", "all",
      "Owners and admins can download everything in a workspace, for a backup or before "
      "leaving Quillhour.",
      "Open Settings > Data > Export. | Select Export everything. | We email you a link to a "
      "ZIP file when it is ready, usually within an hour. The link works for seven days.",
      "The ZIP holds CSV files for clients, projects, time entries, expenses, shifts, time off "
      "and invoices, plus the invoice PDFs and receipt images."),
    a("export-timesheets", "Export timesheets to CSV or Excel", "all",
      "Download time entries for payroll, invoicing in another tool or your own analysis.",
      "Open Reports > Time. | Set the date range and filters, such as person, project or "
      "client. | Select Export and choose CSV or Excel. | Choose Detailed for one row per "
      "entry, or Summary for totals per person and project.",
      "Exports use your rounding settings if rounding applies to reports."),
    a("import-clients", "Import clients from a CSV file", "all",
      "Bring your client list into Quillhour in one go instead of adding clients one by one.",
      "Open Settings > Data > Import and choose Clients. | Download the template and fill in "
      "one client per row: name is required, while email, address, currency and tax number "
      "are optional. | Upload the file and match the columns. | Review the preview and select "
      "Import.",
      "Rows with problems are skipped and listed so that you can fix and upload them again. "
      "Clients whose name already exists are updated, not duplicated."),
    a("import-time", "Import time entries", "business",
      "Move time tracked in another tool or a spreadsheet into Quillhour.",
      "Open Settings > Data > Import and choose Time entries. | Upload a CSV with the date, "
      "person email, project, duration or start and end times, and a note. | Match the columns "
      "and check the preview. | Select Import.",
      "Projects and clients that do not exist yet are created for you. Imported entries can be "
      "undone within 24 hours from the import history."),
    a("migrate-spreadsheets", "Switching from spreadsheets to Quillhour", "",
      "Many teams move to Quillhour from spreadsheets. Doing things in this order makes the "
      "switch smooth.",
      "Import your clients first, then your projects. | Import past time entries if you need "
      "them in reports. | Recreate open invoices by hand or import them as a CSV. | Set the "
      "next invoice number so that your numbering continues. | Invite your team last, so they "
      "arrive at a workspace that is ready.",
      "On the Enterprise plan, our onboarding team can do the import for you."),
    a("import-errors", "Fix errors in an import file", "all",
      "If an import stops with error IMP-20 or skips rows, the preview tells you what is wrong "
      "with each row.",
      "",
      "IMP-20 means the columns do not match: check that the file has a header row and that "
      "every required column is mapped. Dates must be in the format chosen on the upload "
      "screen. Amounts must use a period or a comma consistently, without currency symbols. "
      "People are matched by email, so the address must belong to a member of the workspace. "
      "Save the file as UTF-8 CSV so that accented letters survive, and split files with more "
      "than 20,000 rows."),
    a("scheduled-exports", "Schedule automatic exports", "business",
      "Get a report by email or in cloud storage every week or month, without exporting it by "
      "hand.",
      "Open the report you want and set its filters. | Select Export > Schedule. | Choose how "
      "often, the format and the recipients. | To deliver files to Google Drive or Dropbox, "
      "connect the storage first.",
      "Scheduled exports run at 6 am in the workspace time zone."),
    a("gdpr-request", "Request a copy of your personal data", "all",
      "Under GDPR and similar laws you can get a copy of the personal data Quillhour holds "
      "about you, or ask us to delete it.",
      "Open Account settings > Privacy. | Select Download my data to get your profile, sign-in "
      "history and the time you tracked, as JSON files. | To ask for deletion, select Delete "
      "my account or contact our privacy team.",
      "We answer every request within 30 days. Data that belongs to a workspace, such as "
      "invoices you sent for your employer, is controlled by the workspace owner."),
    a("reports-export", "Export or share a report", "all",
      "Every report in Quillhour can be downloaded or shared.",
      "Open a report and set the date range, grouping and filters. | Select Export and choose "
      "PDF, CSV or Excel. | Or select Share to create a read-only link for someone outside your "
      "workspace.",
      "Shared links can be protected with a password and set to expire. Anyone with the link "
      "sees the report as it was when you shared it, not your live data."),
]

TOPICS["permissions"] = [
    a("roles-overview", "Roles and permissions", "",
      "Each member of a workspace has a role that decides what they can see and do.",
      "",
      "Owner: everything, including billing and deleting the workspace. Admin: everything "
      "except billing and deleting the workspace. Billing admin: the subscription, payment "
      "details and receipts only. Manager: schedules, approvals and reports for the teams they "
      "manage. Member: their own time and shifts, and the projects they are on. Guest: view "
      "only, for example a client who checks progress. Enterprise workspaces can also create "
      "custom roles."),
    a("invite-members", "Invite people to your workspace", "all",
      "Owners and admins can invite teammates by email or share an invite link.",
      "Open Settings > Members and select Invite. | Enter one or more email addresses. | Choose "
      "a role and, if you like, teams and projects. | Select Send invitations.",
      "Invitations expire after 14 days; you can resend them from the Pending tab. On paid "
      "plans each accepted invitation adds a seat. Free workspaces are limited to three "
      "members."),
    a("add-team-members", "Adding team members", "all",
      "You can add team members to your account at any time from the Team page.",
      "Go to the Team page and select Add member. | Type their name and email. | Pick their "
      "access level and select Add.",
      "Team members receive a welcome email with a link to set their password. If the email "
      "does not arrive, select Resend welcome email next to their name. Each new team member "
      "is added to your next bill.",
      legacy=("invite-members", 1)),
    a("remove-members", "Remove someone from your workspace", "all",
      "When someone leaves your team, deactivate them so that they can no longer sign in.",
      "Open Settings > Members and find the person. | Select More > Deactivate. | Choose who "
      "takes over their open shifts, projects and scheduled invoices.",
      "Their time entries, expenses and invoices stay in the workspace and its reports. "
      "Deactivated members free their seat and can be reactivated later. If you use SCIM, "
      "remove them in your identity provider instead."),
    a("transfer-ownership", "Transfer workspace ownership", "all",
      "A workspace always has at least one owner. To hand it over, make someone else the "
      "owner.",
      "Open Settings > Members and find the new owner, who must already be an admin. | Select "
      "More > Make owner. | Enter your password to confirm. | If you want, change your own "
      "role to admin or member.",
      "The new owner becomes responsible for the subscription, and billing emails go to them. "
      "Enterprise workspaces can have up to five owners."),
    a("custom-roles", "Create custom roles", "enterprise",
      "If the standard roles do not fit, build your own with exactly the permissions you need.",
      "Open the Admin console > Roles and select New role. | Start from an existing role or "
      "from scratch. | Turn each permission on or off, for example Approve timesheets or View "
      "rates. | Save, then assign the role in Settings > Members.",
      "Changes to a role apply at once to everyone who has it. The audit log records who "
      "changed which permission."),
    a("manager-role", "What managers can do", "business",
      "The manager role is for team leads who run schedules and approvals but should not "
      "change workspace settings.",
      "",
      "Managers can build and publish schedules, approve time off, swaps and timesheets, and "
      "see reports for the teams they manage. They see rates only if an admin allows it. They "
      "cannot change billing, integrations or security settings, invite admins or delete "
      "projects. A person can manage several teams; assign teams to a manager in Settings > "
      "Teams."),
    a("guest-access", "Give clients guest access", "business",
      "Guests are people outside your team, usually clients, who can follow their projects in "
      "Quillhour.",
      "Open the client's page and select Invite guest. | Enter their email. | Choose what they "
      "can see: project progress, hours, invoices or estimates.",
      "Guests do not take a seat and cannot see other clients, rates or internal notes. They "
      "can comment on projects and approve estimates."),
    a("hide-rates", "Hide rates and amounts from members", "business",
      "Keep billable rates, cost rates and invoice totals visible only to the people who need "
      "them.",
      "Open Settings > Members > Permissions. | Under Money, choose who can see rates and "
      "amounts: admins only, admins and managers, or everyone. | Save.",
      "Members who cannot see rates still track time as normal, and their reports show hours "
      "without amounts."),
    a("teams", "Organize people into teams", "all",
      "Teams group people, for example by department or location, to filter schedules and "
      "reports and to give managers their scope.",
      "Open Settings > Teams and select New team. | Name it and add members. | Choose one or "
      "more managers. | Save.",
      "A person can be in several teams. Teams can also be synced from your identity provider's "
      "groups with SCIM."),
    a("owner-vs-admin", "Owners and admins: what is the difference?", "",
      "Both owners and admins can manage members, settings and integrations.",
      "",
      "Only owners can change the plan, see payment details, cancel the subscription, transfer "
      "ownership or delete the workspace. Admins do everything else, such as inviting people, "
      "changing roles, setting up integrations and editing invoice settings. A workspace must "
      "always have at least one owner. If someone needs to handle payments without full admin "
      "rights, give them the Billing admin role."),
]

TOPICS["errors"] = [
    a("err-401", "Error QH-401: Your session has expired", "all",
      "You see QH-401 when Quillhour no longer recognizes your sign-in, usually after a long "
      "time away or after your password was changed.",
      "Reload the page. | Sign in again. | If you are sent straight back to the error, clear "
      "cookies for Quillhour and try once more.",
      "Repeated QH-401 errors a few minutes after signing in usually mean your browser blocks "
      "cookies or your computer's clock is wrong. For API calls, QH-401 means the API key is "
      "missing, revoked or mistyped."),
    a("err-403", "Error QH-403: You don't have access to this page", "all",
      "QH-403 means you are signed in, but your role does not allow what you tried to do, such "
      "as opening Billing as a member or editing a locked timesheet.",
      "Check that you are in the right workspace with the switcher at the top of the sidebar. "
      "| Ask a workspace admin to change your role or give you access to the project. | If you "
      "were just given access, sign out and back in.",
      "For API calls, QH-403 means the key lacks the scope for that endpoint. From an IP "
      "address outside your workspace's allowlist, every page shows QH-403."),
    a("err-404", "Error QH-404: Page or item not found", "all",
      "QH-404 appears when the invoice, project or page you opened does not exist or was "
      "deleted.",
      "Check the link for typos. | Make sure you are signed in to the workspace the item "
      "belongs to. | Ask the person who sent the link whether the item was deleted or "
      "archived.",
      "Archived projects and clients are hidden from lists but can be found with the Show "
      "archived filter."),
    a("err-409", "Error QH-409: Someone else changed this item", "all",
      "You see QH-409 when you save an invoice, shift or timesheet that another person changed "
      "after you opened it. Quillhour stops you from overwriting their changes.",
      "Copy any text you typed so that it is not lost. | Reload the page to see the latest "
      "version. | Make your change again and save.",
      "In the API, QH-409 means the version you sent is out of date; fetch the object again "
      "and retry."),
    a("err-413", "Error QH-413: File too large", "all",
      "Uploads are limited in size, and QH-413 means the file is bigger than allowed.",
      "",
      "The limits are 10 MB for receipt photos and attachments, 5 MB for logos and profile "
      "photos, and 20 MB or 20,000 rows for import files. To fix it, compress the photo or "
      "export the PDF at a lower quality, split a large import into several files, or remove "
      "unused columns from a CSV. Phones usually shrink photos if you choose a medium size "
      "before uploading."),
    a("err-422", "Error QH-422: Some fields are not valid", "all",
      "QH-422 means Quillhour could not save the form because a value is missing or in the "
      "wrong format. The fields with problems are outlined in red.",
      "Scroll through the form and look for the red outlines. | Read the message below each "
      "one, for example End time must be after start time. | Correct the value and save again.",
      "In the API, QH-422 responses list each invalid field and the reason in the errors "
      "array."),
    a("err-429", "Error QH-429: Too many requests", "all",
      "QH-429 means too many requests were made in a short time. It mostly affects API scripts "
      "and integrations, but can also appear if a browser extension reloads pages very often.",
      "Wait for the number of seconds in the Retry-After header before trying again. | Slow "
      "the script down or spread requests over time. | Use webhooks instead of polling for "
      "changes.",
      "Rate limits are counted per API key. See API rate limits for the numbers on each plan."),
    a("err-500", "Error QH-500: Something went wrong on our side", "all",
      "QH-500 is an unexpected error in Quillhour, not something you did wrong.",
      "Wait a minute and try again; most of these errors are short-lived. | Check the status "
      "page for ongoing incidents. | If it keeps happening, contact support and include the "
      "error ID shown under the message.",
      "The error ID lets our engineers find exactly what failed. Unsaved changes may be lost, "
      "so copy long text before retrying."),
    a("err-503", "Error QH-503: Quillhour is down for maintenance", "",
      "QH-503 means Quillhour is temporarily unavailable, usually during planned maintenance.",
      "",
      "Planned maintenance happens on Sundays between 02:00 and 04:00 UTC, is announced on the "
      "status page at least three days ahead, and rarely lasts more than 15 minutes. Timers "
      "keep running during maintenance, and the mobile app saves your changes offline and "
      "syncs them afterwards. Enterprise customers are emailed before maintenance and can ask "
      "for a different window."),
    a("pay-02", "Payment error PAY-02: Card declined", "",
      "PAY-02 means the bank refused the charge. Quillhour is not told why; only the bank "
      "knows.",
      "",
      "Common reasons are insufficient funds, an expired card, a card that does not allow "
      "online or foreign payments, and the bank's fraud checks. Ask your bank to allow the "
      "payment and try again, or use a different card. For your Quillhour subscription, update "
      "the card in Settings > Billing. For a client paying your invoice, ask the client to "
      "contact their bank or pay another way; the invoice stays unpaid until a payment "
      "succeeds."),
    a("pay-07", "Payment error PAY-07: Card authentication failed", "",
      "PAY-07 means the extra security check from the bank, often called 3D Secure, was not "
      "completed.",
      "",
      "This happens when the confirmation window was closed, the code from the banking app was "
      "wrong or timed out, or a pop-up blocker hid the window. Try again and keep the window "
      "open until the bank confirms. Make sure your banking app is installed and can show "
      "notifications. Cards from some banks need online payments turned on in the banking app "
      "before the first purchase."),
    a("sync-11", "Error SYNC-11: Calendar sync stopped", "all",
      "SYNC-11 means Quillhour lost access to your Google or Outlook calendar, so shifts and "
      "bookings stop appearing there.",
      "Open Account settings > Calendars. | Select Reconnect next to the calendar showing "
      "SYNC-11. | Sign in and allow access again.",
      "This usually happens after a password change in Google or Microsoft, when access was "
      "revoked, or when the chosen calendar was deleted. Events missed while sync was stopped "
      "are copied after reconnecting."),
    a("sync-14", "Error SYNC-14: Accounting sync failed", "business",
      "SYNC-14 means an invoice or payment could not be copied to QuickBooks or Xero. The "
      "failed items are listed under Settings > Integrations.",
      "Open the integration and select View failed items. | Read the reason for each one, for "
      "example a tax rate that is not mapped or a closed accounting period. | Fix the cause and "
      "select Retry.",
      "If the connection itself has expired, select Reconnect. Accounting tools disconnect "
      "apps after 100 days without use."),
    a("sso-03", "Error SSO-03: SAML response could not be verified", "enterprise",
      "SSO-03 means Quillhour rejected the sign-in response from your identity provider.",
      "",
      "The most common cause is an expired or rotated signing certificate: download the new "
      "metadata from your identity provider and upload it in the Admin console > "
      "Authentication. Other causes are a wrong Entity ID or ACS URL in the identity provider, "
      "a clock difference of more than three minutes between servers, or an unsigned "
      "assertion. The Admin console shows the last failed response with the exact reason, "
      "which helps your IT team fix the setup."),
    a("sso-05", "Error SSO-05: You are not assigned to Quillhour", "enterprise",
      "SSO-05 appears when your company's identity provider has not given you access to the "
      "Quillhour app.",
      "",
      "Ask your IT team to assign you, or a group you are in, to the Quillhour app in Okta, "
      "Entra ID or Google Workspace. If you were assigned recently, wait a few minutes and try "
      "again. If your email in the identity provider differs from your Quillhour email, ask "
      "your admin to correct one of them so that they match."),
    a("mail-04", "Error MAIL-04: Invoice email bounced", "all",
      "MAIL-04 on an invoice means the client's email server refused the message, so they did "
      "not receive the invoice.",
      "Check the client's email address for typos on their client page. | Correct it and "
      "select Resend. | If the address is right, ask the client whether their server blocks "
      "messages from Quillhour.",
      "You can also download the PDF and send it yourself, or share the invoice link "
      "directly."),
    a("page-not-loading", "Quillhour is slow or pages will not load", "",
      "If pages load slowly or stay blank, the cause is usually the browser or the network "
      "rather than Quillhour itself.",
      "Check the status page for incidents. | Reload the page without the cache (Ctrl+Shift+R, "
      "or Cmd+Shift+R on a Mac). | Try a private window to rule out extensions. | Try another "
      "network; some company firewalls block the websockets we use.",
      "If the problem continues, send support the time it happened and a screenshot of your "
      "browser's console."),
    a("browser-support", "Supported browsers", "",
      "Quillhour works in the latest two versions of Chrome, Firefox, Safari and Edge on "
      "Windows, macOS and Linux.",
      "",
      "Internet Explorer is not supported. JavaScript and cookies must be turned on. Some ad "
      "blockers and privacy extensions block parts of the app, such as the timer or file "
      "uploads; if something looks broken, try a private window without extensions. On phones "
      "and tablets, use the mobile app for the best experience."),
    a("emails-spam", "Invoice emails go to spam", "business",
      "If clients find your invoices in their spam folder, sending from your own domain "
      "usually fixes it.",
      "Open Settings > Invoices > Email and select Send from my domain. | Add the DNS records "
      "shown (SPF, DKIM and a return path) at your domain provider. | Select Verify.",
      "Until your domain is verified, invoices are sent from Quillhour's address with your "
      "name. Avoid messages that contain only an image or a link, as spam filters dislike "
      "them."),
    a("status-page", "Check Quillhour's service status", "",
      "Our status page shows whether every part of Quillhour is working, and lists incidents "
      "and planned maintenance.",
      "",
      "Find it in the Help menu, or through the link in any error message. You can subscribe "
      "to updates by email, text message or RSS, and choose the components you care about, "
      "such as the mobile apps, the API, calendar sync or payments. Enterprise customers also "
      "get incident notices from their account team. Past incidents stay on the page for 90 "
      "days with a summary of what happened."),
]

TOPICS["navigation"] = [
    a("nav-settings", "Where to find Settings", "",
      "Most options live in Settings, at the bottom of the left sidebar.",
      "",
      "Workspace settings, such as Members, Teams, Billing, Integrations, Invoices, "
      "Scheduling, Time tracking, Security, Data and Developer, are under Settings in the "
      "sidebar; you see only the sections your role allows. Your personal options, such as "
      "password, notifications, language and calendars, are under Account settings in the "
      "avatar menu in the top-right corner. On the mobile app, tap More and then Settings."),
    a("nav-billing", "Where is the billing page?", "",
      "The billing page is in Settings > Billing.",
      "",
      "There you can change your plan, update the payment card, see seats, download receipts "
      "and cancel. Only owners and billing admins see the Billing section; other members can "
      "find out who their owners are in Settings > Members and ask them. Looking for the "
      "invoices you send to clients instead? Those are under Invoices in the sidebar, and "
      "their settings are in Settings > Invoices."),
    a("nav-developer", "Find API keys and webhooks", "",
      "Everything for developers is in Settings > Developer.",
      "",
      "The Developer section has three tabs: API keys, OAuth apps and Webhooks. It also shows "
      "your workspace's API base URL and links to the API reference. Only owners and admins "
      "can see it; if it is missing, ask an admin for access. Enterprise sandboxes are managed "
      "from the Admin console instead, and each sandbox has its own Developer section with "
      "separate keys."),
    a("nav-reports", "Find and open reports", "",
      "Reports are in the left sidebar under Reports.",
      "",
      "The Reports page lists the Time, Projects, Team, Invoices, Payments, Tax, Payroll and "
      "Scheduling reports. Star a report to pin it to the top, and save filtered views with "
      "Save as. Members see reports about their own time only, unless an admin grants more "
      "access. Exports from any report are under the Export button in the top-right corner of "
      "the report."),
    a("nav-switch-workspace", "Switch between workspaces", "all",
      "If you belong to several workspaces, switch between them without signing out.",
      "Select the workspace name at the top of the left sidebar. | Pick another workspace from "
      "the list. | On the mobile app, tap your avatar and choose the workspace.",
      "Each workspace has its own members, settings and billing. Your personal account "
      "settings are shared across all of them."),
    a("nav-shortcuts", "Keyboard shortcuts", "",
      "Press the question mark key anywhere in Quillhour to see every shortcut.",
      "",
      "The most useful ones: T starts or stops the timer, N creates something new on the "
      "current page, slash or Ctrl+K opens search, G then S goes to the schedule, G then I goes "
      "to invoices, G then T goes to time, and the left and right arrow keys move between weeks "
      "on the schedule and timesheet. Shortcuts can be turned off in Account settings > "
      "Preferences if they clash with your screen reader or keyboard layout."),
    a("nav-search", "Search across Quillhour", "",
      "Use search to jump to any client, project, invoice, person or setting.",
      "",
      "Open search with the magnifying glass at the top of the sidebar, or press Ctrl+K "
      "(Cmd+K on a Mac). Type part of a name, an invoice number or a setting such as billing. "
      "Use filters such as client:, invoice: or person: to narrow the results. Search shows "
      "only what your role allows you to see, and archived items appear at the bottom of the "
      "list."),
    a("nav-dashboard", "A tour of the dashboard", "",
      "The dashboard is the first page you see after signing in.",
      "",
      "It shows your running timer, your next shifts, your hours this week compared with your "
      "target, and items that need your attention, such as timesheets to approve or time-off "
      "requests. Owners and admins also see unpaid and overdue invoices and this month's "
      "revenue. Select Customize to add, remove or reorder the cards; each person has their "
      "own layout."),
    a("nav-classic-menu", "Where did the classic menu go?", "",
      "In 2024 Quillhour moved from a top menu to a left sidebar. Everything is still there, in "
      "new places.",
      "",
      "My account is now Account settings in the avatar menu. Team is now Settings > Members. "
      "Billing and Subscription are now Settings > Billing. My calendar is now Schedule. "
      "Reports stayed Reports. The old Integrations tab is Settings > Integrations, and API "
      "token is now Settings > Developer. The legacy invoice editor under Billing > Invoices "
      "remains available for old invoices until the end of 2025."),
    a("nav-profile", "Find your profile and account settings", "",
      "Your personal settings are in the avatar menu, in the top-right corner of every page.",
      "",
      "Select your photo or initials to open the menu. Profile holds your name, photo and job "
      "title; Account settings holds your email, password, two-factor authentication, "
      "notifications, preferences and connected calendars. Sign out is at the bottom of the "
      "same menu. These settings belong to you and follow you into every workspace you join."),
    a("nav-admin-console", "Open the Admin console", "enterprise",
      "Enterprise owners and admins manage security and organization settings in the Admin "
      "console.",
      "Select the workspace name at the top of the sidebar. | Choose Admin console. | If you do "
      "not see it, your role is not Owner or Admin, or your workspace is not on Enterprise.",
      "The Admin console opens in a new tab and covers authentication, provisioning, roles, "
      "the audit log, sandboxes and data retention."),
    a("nav-contact-support", "Contact support", "",
      "Our support team answers questions by chat and email.",
      "",
      "Select the question mark in the bottom-left corner and choose Contact support to start "
      "a chat, or send an email from the same menu. Free workspaces get email support with an "
      "answer within two business days. Business workspaces get chat and email during business "
      "hours in their region. Enterprise workspaces get priority support around the clock and "
      "a named account manager. Include the error ID if you saw one."),
]

TOPICS["security"] = [
    a("sec-overview", "How Quillhour keeps your data safe", "",
      "Security is built into every part of Quillhour.",
      "",
      "Data is hosted in ISO 27001 certified data centers in the US and the EU, encrypted in "
      "transit and at rest, and backed up every day. Staff access to customer data is limited, "
      "logged and needs a second approval. We run yearly penetration tests and a public bug "
      "bounty, and our security program is audited for SOC 2 Type II. Customers can protect "
      "their accounts with two-factor authentication, single sign-on, IP allowlists and the "
      "audit log."),
    a("soc2", "Get our SOC 2 report", "",
      "Quillhour is audited every year for SOC 2 Type II against the security, availability "
      "and confidentiality criteria.",
      "",
      "The latest report is shared under a non-disclosure agreement. Enterprise customers can "
      "download it from the Admin console > Compliance. Business customers and prospects can "
      "request it from our trust center, sign the NDA online and receive the report by email "
      "within one business day. The trust center also has our ISO 27001 certificate, a "
      "penetration test summary and answers to common security questionnaires."),
    a("gdpr-dpa", "GDPR and our data processing agreement", "",
      "Quillhour acts as a data processor for the personal data you store in your workspace, "
      "and complies with GDPR and the UK GDPR.",
      "",
      "Our data processing agreement (DPA) is part of the terms of service for every plan, so "
      "you do not need to sign it separately. If your legal team needs a signed copy, owners "
      "can sign it in Settings > Security > Legal. The DPA includes the standard contractual "
      "clauses for transfers outside the EU. We also help you answer requests from the people "
      "whose data you hold, with export and deletion tools."),
    a("data-residency", "Store data in the EU (data residency)", "enterprise",
      "Enterprise workspaces can choose to store their data only in our EU region, in "
      "Frankfurt and Dublin.",
      "",
      "The region is chosen when a workspace is created. To move an existing workspace, "
      "contact your account manager; the move is planned for a weekend and takes a few hours "
      "of read-only time. Data at rest and backups stay in the chosen region. Some "
      "subprocessors, such as email delivery and payment providers, may process limited data "
      "elsewhere, as listed in our trust center."),
    a("encryption", "Encryption at rest and in transit", "",
      "All connections to Quillhour use TLS 1.2 or newer, and stored data is encrypted at rest "
      "with AES-256.",
      "",
      "This covers the web app, mobile apps, API and webhooks. Backups and uploaded files such "
      "as receipts are encrypted too. Encryption keys are managed in a hardware security "
      "module and rotated every year. Enterprise customers can bring their own key, so that "
      "revoking it makes their data unreadable. Passwords are never stored; we keep only "
      "salted hashes."),
    a("audit-log", "Audit log", "enterprise",
      "The audit log records security-relevant actions in your workspace, so you can see who "
      "did what and when.",
      "Open the Admin console > Audit log. | Filter by person, action or date, for example role "
      "changes or exports. | Export the log as CSV, or stream it to your SIEM through the API.",
      "Events include sign-ins, failed sign-ins, role and permission changes, exports, API key "
      "creation, integration changes and invoice deletions. Entries are kept for two years and "
      "cannot be edited."),
    a("ip-allowlist", "Restrict access by IP address", "enterprise",
      "An IP allowlist makes sure your workspace can only be used from your offices or VPN.",
      "Open the Admin console > Network. | Add the IP addresses or ranges in CIDR notation. | "
      "Choose whether the mobile apps and API are included. | Turn on the allowlist.",
      "People outside the allowed addresses see error QH-403. Add your own address first so "
      "that you do not lock yourself out; owners can always recover access by email."),
    a("sessions", "See and sign out active sessions", "all",
      "Check where your account is signed in, and sign out devices you do not recognize.",
      "Open Account settings > Security > Sessions. | Review the list of browsers and devices "
      "with their location and last activity. | Select Sign out next to a session, or Sign out "
      "everywhere else.",
      "Admins on Business and Enterprise can sign out all sessions of a member from Settings > "
      "Members, for example when a laptop is lost."),
    a("hipaa", "Is Quillhour HIPAA compliant?", "",
      "No. Quillhour is not designed to store protected health information, and we do not sign "
      "business associate agreements (BAAs).",
      "",
      "Healthcare practices can still use Quillhour for staff scheduling, time tracking and "
      "invoicing, as long as no patient health information is entered, for example in "
      "appointment notes, client names or invoice lines. If you need to book patient "
      "appointments with clinical details, use a tool built for healthcare and keep Quillhour "
      "for your internal work."),
    a("vuln-disclosure", "Report a security vulnerability", "",
      "If you find a security issue in Quillhour, please tell us privately so we can fix it.",
      "",
      "Send the details to our security team through the form in our trust center, with steps "
      "to reproduce. Do not access other customers' data or run tests that harm the service. "
      "We confirm receipt within two business days and keep you updated. Valid reports may be "
      "rewarded through our bug bounty program, and we do not take legal action against "
      "researchers who follow these rules."),
]

TOPICS["enterprise"] = [
    a("ent-overview", "What is included in Enterprise?", "enterprise",
      "Enterprise is for organizations with advanced security, compliance and support needs.",
      "",
      "It has everything in Business, plus SAML single sign-on and SCIM provisioning, the Admin "
      "console, custom roles, the audit log, IP allowlists, EU data residency, data retention "
      "policies, sandbox workspaces, a 99.9 percent uptime SLA, priority support around the "
      "clock and a named account manager. Pricing is based on seats and contract length; "
      "contact sales for a quote. Annual contracts can be paid by invoice."),
    a("ent-support", "Enterprise support and response times", "enterprise",
      "Enterprise customers get priority support with guaranteed first response times.",
      "",
      "Urgent issues, such as nobody being able to sign in, get a response within one hour at "
      "any time of day. High priority issues get a response within four business hours, and "
      "normal questions within one business day. Mark the priority when you open a ticket from "
      "the Admin console or by chat. Your named account manager runs quarterly reviews and "
      "helps with rollout and training."),
    a("ent-sla", "Uptime SLA and service credits", "enterprise",
      "Enterprise contracts include a 99.9 percent monthly uptime commitment for the web app, "
      "mobile apps and API.",
      "",
      "Planned maintenance announced at least three days ahead does not count as downtime. If "
      "we miss the target, you get a service credit of 10 percent of the monthly fee for uptime "
      "below 99.9 percent, 25 percent below 99.0 percent and 50 percent below 95.0 percent. "
      "Ask for the credit within 30 days of the end of the month. Uptime history is shown on "
      "the status page."),
    a("ent-retention", "Set data retention policies", "enterprise",
      "Retention policies delete old data automatically, to meet your legal or internal rules.",
      "Open the Admin console > Data retention. | Choose what to delete, such as time entries, "
      "shifts, comments or the personal data of deactivated members. | Set the age, for "
      "example seven years. | Review the preview and turn the policy on.",
      "Deletion runs nightly and cannot be undone. Invoices can be kept longer than other data "
      "to meet tax rules."),
    a("ent-organization", "Manage several workspaces in one organization", "enterprise",
      "Large companies often have a workspace per region or business unit. An organization "
      "links them under one contract.",
      "",
      "From the Admin console, organization admins see all workspaces with their members and "
      "seats, and apply single sign-on, security settings and retention policies to every "
      "workspace at once. People can belong to several workspaces with one account and one "
      "sign-in. Billing is combined into one invoice. To add an existing workspace to your "
      "organization, its owner accepts an invitation from the Admin console."),
    a("ent-admin-console", "The Admin console", "enterprise",
      "The Admin console is where Enterprise owners and admins manage security, identity and "
      "organization-wide settings.",
      "",
      "It has sections for Authentication (SAML single sign-on), Provisioning (SCIM), Roles, "
      "Audit log, Network (the IP allowlist), Data retention, Sandboxes, Compliance documents "
      "and Workspaces. Day-to-day settings, such as invoices, schedules and integrations, stay "
      "in each workspace's Settings. Changes made in the Admin console are recorded in the "
      "audit log."),
    a("ent-domain", "Verify your company domain", "enterprise",
      "Verifying your domain proves that your company owns it. It is needed for single sign-on "
      "and lets you take over accounts people created with their work email.",
      "Open the Admin console > Domains and select Add domain. | Add the TXT record we show to "
      "your domain's DNS. | Select Verify; DNS changes can take up to a day.",
      "After verification, you can invite everyone with an address at your domain into your "
      "organization, and make new sign-ups with that domain join it automatically."),
    a("ent-contract", "Custom contracts and purchase orders", "enterprise",
      "Enterprise customers can sign a custom agreement with terms that fit their purchasing "
      "process.",
      "",
      "We can work with your own master services agreement, add your purchase order numbers to "
      "invoices, agree on payment terms and fill in vendor onboarding and security "
      "questionnaires. Multi-year contracts can lock in the price per seat. Talk to your "
      "account manager, or to sales if you are not a customer yet. Seats added during the term "
      "are charged pro rata on the next invoice."),
]
# fmt: on


@dataclass(frozen=True)
class Query:
    """A labelled query: text, tags, and its judgments as `slug:grade` pairs."""

    text: str
    intent: str
    segment: str
    judged: tuple[tuple[str, int], ...]


def q(text: str, intent: str, segment: str, judged: str) -> Query:
    """A query; `judged` is `slug:grade slug:grade ...` (3 exact, 2 mostly, 1 partial, 0 not)."""
    pairs = tuple((slug, int(grade)) for slug, grade in (p.split(":") for p in judged.split()))
    return Query(text, intent, segment, pairs)


# fmt: off
QUERIES: list[Query] = [
    # billing: the subscription to Quillhour itself
    q("refund", "billing", "business",
      "refund-policy:3 refund-request:2 cancel:1 credit-notes:0"),
    q("can I get my money back after cancelling an annual plan", "billing", "business",
      "refund-policy:3 refund-request:2 cancel:2 downgrade:1"),
    q("cancel subscription", "billing", "business",
      "cancel:3 downgrade:2 refund-policy:1 delete-workspace:1"),
    q("how do I stop being charged every month", "billing", "business",
      "cancel:3 downgrade:2 billing-cycle:1"),
    q("upgrade to business", "billing", "free", "upgrade:3 free-trial:2 plans:2"),
    q("whats the difference between business and enterprise plans", "billing", "free",
      "plans:3 ent-overview:2 upgrade:1"),
    q("pricing", "billing", "free",
      "plans:3 seats:1 upgrade:1 nonprofit-discount:1 tax-inclusive:0"),
    q("change credit card", "billing", "business",
      "payment-method:3 failed-payment:1 pay-02:1 credit-notes:0"),
    q("my card was declined when paying for quillhour", "billing", "business",
      "pay-02:3 failed-payment:2 payment-method:2 pay-07:1"),
    q("download receipt for our subscription", "billing", "business",
      "receipts:3 nav-billing:1 billing-contact:1 invoice-pdf:0 invoice-export:0"),
    q("add VAT number to billing", "billing", "business",
      "subscription-tax-id:3 sales-tax-charged:2 tax-reverse-charge:0 tax-rates:0"),
    q("why is there tax on my bill", "billing", "business",
      "sales-tax-charged:3 subscription-tax-id:2"),
    q("annual billing discount", "billing", "business",
      "billing-cycle:3 plans:2 nonprofit-discount:1"),
    q("how are seats billed when I add someone in the middle of the month", "billing",
      "business", "seats:3 add-seats:2 plans:1 invite-members:1"),
    q("reduce number of seats", "billing", "business",
      "add-seats:3 seats:2 remove-members:1"),
    q("free trial", "billing", "free", "free-trial:3 plans:1 upgrade:1"),
    q("nonprofit discount", "billing", "free", "nonprofit-discount:3 plans:1"),
    q("can we pay by bank transfer instead of card", "billing", "enterprise",
      "pay-by-invoice:3 ent-contract:2 payment-method:1 invoice-mark-paid:0"),
    q("purchase order", "billing", "enterprise", "ent-contract:3 pay-by-invoice:3"),
    q("send the invoices for our plan to accounts payable", "billing", "business",
      "billing-contact:3 receipts:2 invoice-create:0"),
    q("pay in euros", "billing", "business", "billing-currency:3 invoice-currency:0"),
    q("what happens if our payment fails", "billing", "business",
      "failed-payment:3 pay-02:2 payment-method:1 pay-07:1"),
    q("downgrade", "billing", "business", "downgrade:3 cancel:1 plans:1"),
    q("enterprise pricing quote", "billing", "enterprise",
      "ent-overview:3 plans:2 ent-contract:2 estimates:0"),
    q("we were charged twice this month", "billing", "business",
      "refund-policy:3 refund-request:3 receipts:1"),
    # account: signing in, the profile, two-factor authentication
    q("forgot password", "account", "free",
      "reset-password:3 account-locked:1 magic-link:1 change-password:1"),
    q("pasword reset link expired", "account", "free", "reset-password:3 magic-link:1"),
    q("change my email address", "account", "business", "change-email:3 update-profile:1"),
    q("delete my account", "account", "free",
      "delete-account:3 delete-workspace:1 gdpr-request:1 join-leave-workspace:1"),
    q("set up 2fa", "account", "business",
      "2fa-enable:3 2fa-security-keys:1 2fa-enforce:1"),
    q("I got a new phone and now I can't get my 2FA code", "account", "business",
      "2fa-lost-phone:3 2fa-recovery:2 2fa-codes-rejected:1 2fa-enable:1"),
    q("recovery codes", "account", "free", "2fa-recovery:3 2fa-lost-phone:2"),
    q("account locked", "account", "free",
      "account-locked:3 reset-password:1 sign-in:1 locked-timesheets:0"),
    q("log in with my google account", "account", "free",
      "social-sign-in:3 sign-in:2 sso-google:0 int-google-calendar:0"),
    q("why do I keep getting logged out", "account", "business",
      "session-timeout:3 err-401:2 sessions:1"),
    q("make two factor mandatory for the whole team", "account", "business",
      "2fa-enforce:3 2fa-enable:1 sso-enforce:1"),
    q("how do I sign in without typing a password", "account", "free",
      "magic-link:3 social-sign-in:2 sign-in:2"),
    q("password requirements", "account", "free", "password-rules:3 change-password:1"),
    q("leave a workspace a client invited me to", "account", "free",
      "join-leave-workspace:3 delete-account:1 nav-switch-workspace:1"),
    q("sign up", "account", "free", "create-account:3 free-trial:1 sign-in:1"),
    q("change the language to german", "account", "business", "language-timezone:3"),
    q("use a yubikey", "account", "enterprise", "2fa-security-keys:3 2fa-enable:1"),
    q("authenticator code invalid", "account", "business",
      "2fa-codes-rejected:3 2fa-lost-phone:1 2fa-recovery:1"),
    q("sign out of all my devices", "account", "enterprise",
      "sessions:3 change-password:1 session-timeout:1"),
    q("change my profile picture", "account", "free", "update-profile:3"),
    # navigational: where something is in the app
    q("settings", "navigational", "free", "nav-settings:3 nav-profile:2"),
    q("where is the billing page", "navigational", "business",
      "nav-billing:3 nav-settings:2 nav-classic-menu:1 receipts:1"),
    q("where do I find my api key", "navigational", "business",
      "nav-developer:3 api-keys:3 api-overview:1 nav-classic-menu:1"),
    q("reports", "navigational", "business",
      "nav-reports:3 reports-export:1 export-timesheets:1"),
    q("switch workspace", "navigational", "free",
      "nav-switch-workspace:3 join-leave-workspace:1"),
    q("keyboard shortcuts", "navigational", "free", "nav-shortcuts:3 nav-search:1"),
    q("where did the team page go after the redesign", "navigational", "business",
      "nav-classic-menu:3 invite-members:1 roles-overview:1 add-team-members:0"),
    q("admin console", "navigational", "enterprise",
      "nav-admin-console:3 ent-admin-console:3"),
    q("contact support", "navigational", "free", "nav-contact-support:3 ent-support:1"),
    q("where are my account settings", "navigational", "free",
      "nav-profile:3 nav-settings:2 nav-classic-menu:2"),
    q("status page", "navigational", "business", "status-page:3 err-503:1 err-500:1"),
    q("search", "navigational", "free", "nav-search:3 nav-shortcuts:1"),
    q("where can I see our webhooks", "navigational", "business",
      "nav-developer:3 webhooks:2"),
    q("my account page", "navigational", "free",
      "nav-profile:3 nav-classic-menu:2 cancel-legacy:0"),
    q("where do managers find time off requests", "navigational", "business",
      "time-off-approve:3 time-off-request:1 manager-role:1"),
    q("where is the integrations page", "navigational", "business",
      "integrations-overview:3 nav-settings:2 nav-classic-menu:2 int-disconnect:1"),
    q("audit log", "navigational", "enterprise", "audit-log:3 ent-admin-console:2"),
    q("invoice settings", "navigational", "business",
      "nav-settings:2 nav-billing:2 invoice-branding:2 invoice-numbering:2 tax-rates:1"),
    q("open the schedule", "navigational", "free",
      "schedule-create:3 nav-shortcuts:1 nav-dashboard:1"),
    q("where do I download the SOC 2 report", "navigational", "enterprise",
      "soc2:3 ent-admin-console:2 sec-overview:1"),
    # troubleshooting: error codes and things that do not work
    q("QH-403", "troubleshooting", "business", "err-403:3 ip-allowlist:1 roles-overview:1"),
    q("error 401 session expired", "troubleshooting", "free",
      "err-401:3 session-timeout:2"),
    q("SSO-03", "troubleshooting", "enterprise", "sso-03:3 sso-overview:1 sso-okta:1"),
    q("sso error saying I am not assigned to the app", "troubleshooting", "enterprise",
      "sso-05:3 sso-okta:1 sso-entra:1"),
    q("google calendar stopped syncing", "troubleshooting", "business",
      "sync-11:3 int-google-calendar:2"),
    q("quickbooks sync failed", "troubleshooting", "business",
      "sync-14:3 int-quickbooks:2 int-xero:1"),
    q("mobile app keeps crashing on android", "troubleshooting", "free",
      "mobile-crash:3 mobile-requirements:2"),
    q("not getting notification emails", "troubleshooting", "business",
      "notif-not-arriving:3 notif-email:2 emails-spam:0"),
    q("client says my invoice went to their spam folder", "troubleshooting", "business",
      "emails-spam:3 mail-04:1 notif-not-arriving:0"),
    q("invoice email bounced", "troubleshooting", "business", "mail-04:3 emails-spam:1"),
    q("file too large when uploading a receipt", "troubleshooting", "free",
      "err-413:3 mobile-receipts:1 expenses:1"),
    q("import failed IMP-20", "troubleshooting", "business",
      "import-errors:3 import-clients:1 import-time:1"),
    q("getting 429 too many requests from the API", "troubleshooting", "enterprise",
      "err-429:3 api-rate-limits:3"),
    q("page won't load", "troubleshooting", "free",
      "page-not-loading:3 browser-support:2 status-page:1 err-503:1"),
    q("QH-409 someone else changed this", "troubleshooting", "business", "err-409:3"),
    q("the app says something went wrong error 500", "troubleshooting", "free",
      "err-500:3 status-page:1"),
    q("our webhooks are not being delivered to the server", "troubleshooting",
      "enterprise", "webhook-retries:3 webhooks:2 webhook-signature:1"),
    q("webhook signature verification keeps failing", "troubleshooting", "enterprise",
      "webhook-signature:3 webhooks:1"),
    q("can't edit my timesheet it says locked", "troubleshooting", "business",
      "locked-timesheets:3 timesheet-approval:1 err-403:1 account-locked:0"),
    q("red warning icon on a shift", "troubleshooting", "business",
      "schedule-conflicts:3 overtime:1 availability:1"),
    q("client card payment failed 3d secure", "troubleshooting", "business",
      "pay-07:3 pay-02:1 int-stripe:1"),
    q("shift times are an hour off", "troubleshooting", "business",
      "schedule-timezones:3 language-timezone:1"),
    q("cant clock in when im not at the site", "troubleshooting", "business",
      "mobile-gps:3 mobile-clock-in:2"),
    q("saml certificate expired", "troubleshooting", "enterprise",
      "sso-03:3 sso-overview:1 sso-legacy:0"),
    q("down for maintenance", "troubleshooting", "free", "err-503:3 status-page:2"),
    q("changes made offline on my phone are not syncing", "troubleshooting", "free",
      "mobile-offline:3 mobile-crash:1"),
    # how-to: doing something with the product
    q("export invoices to excel", "how-to", "business",
      "invoice-export:3 reports-export:1 export-all:1 receipts:0 export-timesheets:0"),
    q("recurring invoice", "how-to", "business", "invoice-recurring:3 invoice-create:1"),
    q("how do I invoice my tracked hours", "how-to", "business",
      "invoice-from-time:3 invoice-create:2 billable-time:1 hourly-rates:1"),
    q("add my logo to invoices", "how-to", "free", "invoice-branding:3 invoice-pdf:1"),
    q("automatically remind clients who have not paid", "how-to", "business",
      "invoice-reminders:3 late-fees:2"),
    q("mark an invoice as paid", "how-to", "free",
      "invoice-mark-paid:3 invoice-deposits:1"),
    q("credit note", "how-to", "business",
      "credit-notes:3 invoice-void:1 invoice-edit-sent:1"),
    q("how do I cancel an invoice I already sent", "how-to", "free",
      "invoice-void:3 credit-notes:2 invoice-edit-sent:1 appointment-reschedule:0"),
    q("turn a quote into an invoice", "how-to", "free", "estimates:3 invoice-create:1"),
    q("bill a client in a different currency", "how-to", "business",
      "invoice-currency:3 billing-currency:0"),
    q("charge GST and PST on the same invoice", "how-to", "business",
      "tax-compound:3 tax-rates:2"),
    q("reverse charge VAT", "how-to", "business",
      "tax-reverse-charge:3 tax-rates:1 subscription-tax-id:0"),
    q("let customers pay online with a credit card", "how-to", "business",
      "invoice-online-payments:3 int-stripe:2 int-paypal:2"),
    q("repeating shifts", "how-to", "business",
      "shifts-recurring:3 schedule-templates:1 schedule-copy-week:1"),
    q("how can employees trade shifts with each other", "how-to", "business",
      "shift-swap:3 open-shifts:1"),
    q("request vacation", "how-to", "free",
      "time-off-request:3 time-off-approve:1 availability:1"),
    q("copy the schedule from last week", "how-to", "business",
      "schedule-copy-week:3 schedule-templates:2"),
    q("booking page so clients can schedule appointments", "how-to", "business",
      "booking-page:3 booking-buffers:1 appointment-reminders:1"),
    q("connect xero", "how-to", "business",
      "int-xero:3 integrations-overview:1 sync-14:1"),
    q("sync my shifts to outlook", "how-to", "free",
      "int-outlook:3 int-google-calendar:1 sync-11:1"),
    q("set up sso with okta", "how-to", "enterprise", "sso-okta:3 sso-overview:2 scim:1"),
    q("automatically create users from azure ad", "how-to", "enterprise",
      "scim:3 sso-jit:2 sso-entra:2 sso-overview:1"),
    q("create api key", "how-to", "business",
      "api-keys:3 nav-developer:2 api-overview:1"),
    q("how do I import my client list from a spreadsheet", "how-to", "free",
      "import-clients:3 migrate-spreadsheets:2 import-errors:1"),
    q("export all our data before we leave", "how-to", "business",
      "export-all:3 gdpr-request:1 delete-workspace:1 reports-export:1"),
    q("invite team members", "how-to", "business",
      "invite-members:3 seats:1 add-seats:1 guest-access:1"),
    q("give my client read only access to their project", "how-to", "business",
      "guest-access:3 roles-overview:1"),
    q("role that can approve timesheets but not see rates", "how-to", "enterprise",
      "custom-roles:3 hide-rates:2 roles-overview:1 manager-role:1 timesheet-approval:1"),
    q("transfer ownership", "how-to", "business", "transfer-ownership:3 owner-vs-admin:1"),
    q("delete time entries older than seven years automatically", "how-to", "enterprise",
      "ent-retention:3 delete-workspace:0"),
    q("only allow logins from our office network", "how-to", "enterprise",
      "ip-allowlist:3 sso-enforce:1"),
    q("approve timesheets", "how-to", "business",
      "timesheet-approval:3 locked-timesheets:1"),
    # security and compliance
    q("hipaa", "security", "business", "hipaa:3 sec-overview:1 gdpr-dpa:1"),
    q("do you have a soc 2 type 2 report", "security", "enterprise",
      "soc2:3 sec-overview:2"),
    q("sign the DPA for GDPR", "security", "enterprise", "gdpr-dpa:3 gdpr-request:1"),
    q("can our data be stored only in europe", "security", "enterprise",
      "data-residency:3 gdpr-dpa:1 sec-overview:1"),
    q("is data encrypted at rest", "security", "enterprise",
      "encryption:3 sec-overview:2"),
    q("report a vulnerability", "security", "free", "vuln-disclosure:3"),
    q("bring your own encryption key", "security", "enterprise",
      "encryption:3 ent-overview:1"),
    q("who can access our data and how is it protected", "security", "enterprise",
      "sec-overview:3 encryption:2 audit-log:1"),
]
# fmt: on

STEP_INTROS = ("Here is how:", "Follow these steps:", "Steps:", "What to do:")
PLAN_LINES = {
    "all": (
        "Available on all plans.",
        "This works on every plan, Free included.",
        "Included in the Free, Business and Enterprise plans.",
    ),
    "business": (
        "Available on the Business and Enterprise plans.",
        "Requires a Business or Enterprise plan.",
        "This is part of the Business plan and above.",
    ),
    "enterprise": (
        "Available on the Enterprise plan.",
        "This is an Enterprise feature.",
        "Enterprise plan only.",
    ),
}


def _pick(options: tuple[str, ...], slug: str, salt: str) -> str:
    """A fixed, evenly spread choice among `options` for this article."""
    digest = hashlib.sha256(f"{salt}:{slug}".encode()).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def _sentence(text: str) -> str:
    return text if text.endswith((".", "?", "!", ":")) else text + "."


def article_text(article: Article) -> str:
    """The body of an article: lead, steps (numbered one of two ways), notes, plan line."""
    parts = [article.lead]
    if article.steps:
        numbered = _pick(("{n}. {s}", "Step {n}: {s}"), article.slug, "steps")
        steps = " ".join(
            numbered.format(n=n, s=_sentence(step)) for n, step in enumerate(article.steps, 1)
        )
        # "Steps: Step 1: ..." reads badly, so that intro goes only with "1. ...".
        intros = STEP_INTROS if numbered.startswith("{n}.") else STEP_INTROS[:2] + STEP_INTROS[3:]
        parts.append(f"{_pick(intros, article.slug, 'intro')} {steps}")
    if article.notes:
        parts.append(article.notes)
    if article.plans:
        parts.append(_pick(PLAN_LINES[article.plans], article.slug, "plan"))
    return " ".join(parts)


def doc_ids() -> dict[str, str]:
    """Slug -> doc id: `kb-` and a number whose hundreds are the topic."""
    ids: dict[str, str] = {}
    for block, articles in enumerate(TOPICS.values(), 11):
        for position, article in enumerate(articles, 1):
            if article.slug in ids:
                raise ValueError(f"duplicate article slug {article.slug!r}")
            ids[article.slug] = f"kb-{block * 100 + position}"
    return ids


def judgments(query: Query, articles: dict[str, Article]) -> list[tuple[str, int]]:
    """The query's judgments, plus the outdated twin of any article judged 2 or 3 at the
    twin's legacy grade (below the current article's), unless judged already."""
    judged = dict(query.judged)
    for slug, grade in query.judged:
        if slug not in articles:
            raise ValueError(f"query {query.text!r} judges unknown article {slug!r}")
        if not 0 <= grade <= 3:
            raise ValueError(f"query {query.text!r}: grade {grade} is outside 0-3")
    for twin in articles.values():
        current = twin.legacy_of
        if current in judged and judged[current] >= 2 and twin.slug not in judged:
            judged[twin.slug] = min(twin.legacy_grade, judged[current] - 1)
    return list(judged.items())


def render() -> dict[str, str]:
    """Relative path -> content of every generated file."""
    ids = doc_ids()
    articles = {article.slug: article for group in TOPICS.values() for article in group}
    corpus = []
    for slug, article in articles.items():
        text = article_text(article)
        words = len(text.split())
        if not MIN_WORDS <= words <= MAX_WORDS:
            raise ValueError(f"article {slug!r} has {words} words, not {MIN_WORDS}-{MAX_WORDS}")
        if article.legacy_of is not None and article.legacy_of not in articles:
            raise ValueError(f"article {slug!r} is the legacy twin of unknown {article.legacy_of}")
        row = {"_id": ids[slug], "title": article.title, "text": text}
        corpus.append(json.dumps(row, ensure_ascii=False))
    queries = []
    qrels = ["query-id\tcorpus-id\tscore"]
    seen: set[str] = set()
    for number, query in enumerate(QUERIES, 1):
        if query.text in seen:
            raise ValueError(f"duplicate query {query.text!r}")
        seen.add(query.text)
        if query.intent not in INTENTS or query.segment not in SEGMENTS:
            raise ValueError(f"query {query.text!r}: unknown intent or segment")
        qid = f"q{number:03d}"
        row = {"_id": qid, "text": query.text, "intent": query.intent, "segment": query.segment}
        queries.append(json.dumps(row, ensure_ascii=False))
        judged = judgments(query, articles)
        if max(grade for _, grade in judged) < 2:
            raise ValueError(f"query {query.text!r} has no article graded 2 or 3")
        qrels += [f"{qid}\t{ids[slug]}\t{grade}" for slug, grade in judged]
    return {
        "corpus.jsonl": "\n".join(corpus) + "\n",
        "queries.jsonl": "\n".join(queries) + "\n",
        "qrels/test.tsv": "\n".join(qrels) + "\n",
    }


def stats(files: dict[str, str]) -> dict[str, Counter[str]]:
    """Counts for the README: documents, queries per intent and segment, judgments per grade."""
    queries = [json.loads(line) for line in files["queries.jsonl"].splitlines()]
    grades = [line.split("\t")[2] for line in files["qrels/test.tsv"].splitlines()[1:]]
    lengths = Counter(
        "1-2" if n < 3 else "3-5" if n < 6 else "6+"
        for n in (len(row["text"].split()) for row in queries)
    )
    return {
        "documents": Counter({"all": len(files["corpus.jsonl"].splitlines())}),
        "queries": Counter({"all": len(queries)}),
        "intent": Counter(row["intent"] for row in queries),
        "segment": Counter(row["segment"] for row in queries),
        "query_length": lengths,
        "grade": Counter(grades),
    }


def main(argv: list[str] | None = None) -> int:
    """Write the files next to this script, or with --check report whether they are current."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a file differs")
    parser.add_argument("--stats", action="store_true", help="print the counts")
    args = parser.parse_args(argv)
    files = render()
    if args.stats:
        for name, counts in stats(files).items():
            print(name, dict(sorted(counts.items())))
        return 0
    stale = [
        name
        for name, text in files.items()
        if not (HERE / name).is_file() or (HERE / name).read_text(encoding="utf-8") != text
    ]
    if args.check:
        for name in stale:
            print(f"{name} differs from the generator's output", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        text = files[name]
        (HERE / name).parent.mkdir(parents=True, exist_ok=True)
        (HERE / name).write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {name} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
